#!/usr/bin/env bash
# Saturn's tokenizer against Hugging Face's own JavaScript implementation
# (npm @huggingface/tokenizers) and llama3-tokenizer-js (npm, Llama 3's real
# vocabulary and merges): tests/tokenizer/reference.mjs trains small
# tokenizers, rebuilds Llama 3's and encodes multilingual text with the JS
# libraries; tokenizer_reference_check encodes the same text with Saturn and
# compares the ids; then `saturn tokenize` writes token files whose ids the JS
# side reads back and compares, and bad input must fail cleanly.
#
#   reference_test.sh WORK_DIR CHECK_BINARY SATURN
#
# The npm packages are installed into WORK_DIR/npm once (npm must reach its
# registry). Exits 77 (ctest skip) when node or npm is missing:
# scripts/setup.sh installs Debian's nodejs and npm.
set -u
work=${1:?usage: reference_test.sh WORK_DIR CHECK_BINARY SATURN}
check=${2:?usage: reference_test.sh WORK_DIR CHECK_BINARY SATURN}
saturn=${3:?usage: reference_test.sh WORK_DIR CHECK_BINARY SATURN}
here=$(cd "$(dirname "$0")" && pwd)

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "SKIP: node and npm are not installed (Debian packages 'nodejs' and 'npm'; scripts/setup.sh installs them)"
  exit 77
fi

packages=(@huggingface/tokenizers@0.2.0 llama3-tokenizer-js@1.2.0)
npm_dir=$work/npm
marker=$npm_dir/.installed-tokenizers-0.2.0-llama3-tokenizer-js-1.2.0
if [[ ! -f "$marker" ]]; then
  rm -rf "$npm_dir"
  mkdir -p "$npm_dir"
  echo "installing ${packages[*]} into $npm_dir"
  if ! npm install --prefix "$npm_dir" --no-save --no-audit --no-fund --loglevel=error "${packages[@]}" \
      >"$work/npm-install.log" 2>&1; then
    echo "FAILED: npm install ${packages[*]} (the registry must be reachable):"
    cat "$work/npm-install.log"
    exit 1
  fi
  touch "$marker"
fi
modules=$npm_dir/node_modules

status=0
cases=$work/cases
rm -rf "$cases" "$work/out"
mkdir -p "$work/out"
node "$here/reference.mjs" prepare "$modules" "$cases" || { echo "FAILED: the JS reference"; exit 1; }
"$check" "$cases/cases.json" || status=1

# saturn tokenize end to end: JSON Lines and a text file, uint16 and uint32.
for name in llama3-real gpt2-style sentencepiece-legacy qwen2-style; do
  out=$work/out/$name.bin
  if ! "$saturn" tokenize --tokenizer "$cases/$name" "$cases/corpus/docs.jsonl" "$cases/corpus/plain.txt" \
      --output "$out" --threads 3 >"$work/out/$name.log" 2>&1; then
    echo "FAILED: saturn tokenize with $name:"
    cat "$work/out/$name.log"
    status=1
    continue
  fi
  cat "$work/out/$name.log"
  node "$here/reference.mjs" check-file "$modules" "$cases" "$name" "$out" || status=1
done

# Bad input: a JSON line without the text field is exit 2, one message that
# names the file and line, and no output file.
printf '{"text": "fine"}\n{"body": "no text here"}\n' >"$work/out/bad.jsonl"
"$saturn" tokenize --tokenizer "$cases/gpt2-style" "$work/out/bad.jsonl" --output "$work/out/bad.bin" \
  >"$work/out/bad.log" 2>&1
rc=$?
if [[ $rc -ne 2 ]] || ! grep -q "bad.jsonl:2: text: missing" "$work/out/bad.log" || [[ -e "$work/out/bad.bin" ]] ||
    compgen -G "$work/out/bad.bin*" >/dev/null; then
  echo "FAILED: a line without the field: exit $rc (expected 2), output:"
  cat "$work/out/bad.log"
  ls "$work/out"
  status=1
else
  echo "bad input: $(cat "$work/out/bad.log")"
fi
exit $status
