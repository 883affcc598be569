// The independent reference for Saturn's tokenizer: Hugging Face's own
// JavaScript implementation (npm @huggingface/tokenizers) and, for Llama 3's
// real vocabulary, llama3-tokenizer-js (npm), which ships that vocabulary and
// its merges. Nothing here is Saturn's code or output.
//
//   node reference.mjs prepare NODE_MODULES WORK
//     Writes tokenizers into WORK/<name>/ (tokenizer.json and
//     tokenizer_config.json): small ones trained here on sample text
//     (byte-level BPE in GPT-2's, Llama 3's, Qwen 2's and SmolLM's set-ups;
//     SentencePiece-style BPE with byte fallback, legacy Llama 2 and
//     Metaspace set-ups) and Llama 3's real one rebuilt from
//     llama3-tokenizer-js's data. Then encodes multilingual sample texts with
//     the JS library and writes WORK/cases.json: {cases: [{name, dir, texts,
//     ids}]}, which tokenizer_reference_check compares Saturn's ids with.
//     Also writes WORK/corpus/ (documents for `saturn tokenize`) and
//     WORK/expected_files.json (the token files' ids per tokenizer).
//
//   node reference.mjs check-file NODE_MODULES WORK NAME FILE
//     Reads FILE, a token file `saturn tokenize` wrote with tokenizer NAME,
//     parsing its layout independently (docs/contracts.md, Contract 5), and
//     compares its ids with WORK/expected_files.json.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [command, modules, work, ...rest] = process.argv.slice(2);
if (!command || !modules || !work) {
  console.error("usage: node reference.mjs prepare|check-file NODE_MODULES WORK [NAME FILE]");
  process.exit(2);
}
const load = (p) => import(pathToFileURL(path.join(modules, p)).href);
const { Tokenizer } = await load("@huggingface/tokenizers/dist/tokenizers.mjs");

// ---- Sample text ----

const FIXED_TEXTS = [
  "Hello world! It's a test: don't stop, we'll see; I'M HERE, they'RE fine, you'VE got it, he'D go, she'S ok.",
  "Café naïve résumé — über Straße, señor, façade; Ωμέγα; Привет, мир! Ça va?",
  "日本語のテキストと中文文本，한국어 텍스트。東京は晴れ、気温は２５度です。",
  "Emoji: 😀😃 👍🏽 👨‍👩‍👧‍👦 ❤️ 🇫🇷! and a 🦙 in 2024",
  "Numbers: 1234567890 3.14159 1,000,000 00042 ٣٤٥ ½ ² 12th 2nd",
  "Tabs\tand\t\ttabs\n\nBlank lines above\n\n\n   indented line\r\nwindows line\r\n",
  "   leading spaces and trailing spaces   ",
  "code: def f(x):\n    return x**2  # comment\n\tif x>0: print(f'{x}')\n\n}\n",
  "A special token <|endoftext|> inside the text, and <|endoftext|>twice<|endoftext|>.",
  "<|begin_of_text|>Llama 3 chat<|eot_id|> next <|eot_id|>\n<|start_header_id|>user<|end_header_id|>",
  "<s>SentencePiece</s> <s> spaced </s>text<unk>",
  "Decomposed: Cafe\u0301, n\u0303o, A\u030a; composed: Café, ño, Å",
  "a".repeat(300) + " " + "Supercalifragilisticexpialidocious".repeat(8),
  " ",
  "\n",
  "'",
  "'s",
  "A'LL go'",
  "हिन्दी पाठ, العربية نص, עברית טקסט, ภาษาไทย",
  "Mixed\u00a0no-break\u3000ideographic space\u2003em space and zero\u200bwidth",
  "Mathematical 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 and 𝟙𝟚𝟛 digits, ﬁ ligature",
  "The <tool> call<tool>and  <tool>  spaced",
  "",
];

const FRAGMENTS = [
  "the", "The", " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", "'s", "'LL", "'t", "'Re", "don't",
  "I'm", "123", "4567", "9", "é", "e\u0301", "ü", "Straße", "日本", "語", "😀", "👍🏽",
  "👨‍👩‍👧", "中文", "한국", "Привет", "мир", "!", "?", "...", "—", "«", "»", "$", "%", "_",
  "-", "(", ")", "{", "}", "<|endoftext|>", "<|eot_id|>", "<|begin_of_text|>", "<s>", "</s>",
  "<tool>", "\u00a0", "\u3000", "x", "Y", "ﬁ", "٣", "½", "𝔘𝔫𝔦", "\u200b", "hello", "world",
  "naïve", "café", "🇫🇷", ".", ",", ":", "#", "\"", "’", "‘", "¿", "ñ", "ß", "İ", "ǅ", "Ω",
];

// mulberry32: a small seeded PRNG, so the texts are the same on every run.
function Random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomTexts(count, seed) {
  const random = Random(seed);
  const texts = [];
  for (let i = 0; i < count; ++i) {
    const n = Math.floor(random() * 30);
    let text = "";
    for (let k = 0; k < n; ++k) text += FRAGMENTS[Math.floor(random() * FRAGMENTS.length)];
    texts.push(text);
  }
  return texts;
}

const TEXTS = [...FIXED_TEXTS, ...randomTexts(400, 42)];

// Training text for the small tokenizers: the samples and more of the same.
const TRAINING = [...FIXED_TEXTS, ...randomTexts(300, 7)].join("\n");

// ---- Byte-level BPE, trained here ----

const BYTES_TO_UNICODE = (() => {
  const bs = [];
  for (let b = 0x21; b <= 0x7e; ++b) bs.push(b);
  for (let b = 0xa1; b <= 0xac; ++b) bs.push(b);
  for (let b = 0xae; b <= 0xff; ++b) bs.push(b);
  const map = {};
  for (const b of bs) map[b] = String.fromCodePoint(b);
  let n = 0;
  for (let b = 0; b < 256; ++b) {
    if (!(b in map)) map[b] = String.fromCodePoint(256 + n++);
  }
  return map;
})();
const encoder = new TextEncoder();
const byteLevel = (text) => Array.from(encoder.encode(text), (b) => BYTES_TO_UNICODE[b]).join("");

// Merges: the most frequent adjacent pair, ties broken by the pair's text,
// `count` times over words given as arrays of symbols with their counts.
function trainMerges(words, count, vocab) {
  const merges = [];
  for (let m = 0; m < count; ++m) {
    const pairs = new Map();
    for (const [symbols, n] of words) {
      for (let i = 0; i + 1 < symbols.length; ++i) {
        const key = symbols[i] + "\u0000" + symbols[i + 1];
        pairs.set(key, (pairs.get(key) ?? 0) + n);
      }
    }
    let best = null;
    for (const [key, n] of pairs) {
      if (best === null || n > best[1] || (n === best[1] && key < best[0])) best = [key, n];
    }
    if (best === null || best[1] < 2) break;
    const [a, b] = best[0].split("\u0000");
    merges.push([a, b]);
    if (!(a + b in vocab)) vocab[a + b] = Object.keys(vocab).length;
    for (const entry of words) {
      const s = entry[0];
      const out = [];
      for (let i = 0; i < s.length; ++i) {
        if (i + 1 < s.length && s[i] === a && s[i + 1] === b) {
          out.push(a + b);
          ++i;
        } else {
          out.push(s[i]);
        }
      }
      entry[0] = out;
    }
  }
  return merges;
}

function countWords(pieces) {
  const counts = new Map();
  for (const p of pieces) counts.set(p, (counts.get(p) ?? 0) + 1);
  return [...counts].map(([w, n]) => [Array.from(w), n]);
}

const GPT2_PATTERN = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;
const LLAMA3_PATTERN =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const QWEN2_PATTERN =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

function byteLevelModel({ merges: count, pairs, ignoreMerges }) {
  const vocab = {};
  for (let b = 0; b < 256; ++b) vocab[BYTES_TO_UNICODE[b]] = b;
  const words = countWords((TRAINING.match(GPT2_PATTERN) ?? []).map(byteLevel));
  const merges = trainMerges(words, count, vocab);
  return {
    type: "BPE",
    dropout: null,
    unk_token: null,
    continuing_subword_prefix: null,
    end_of_word_suffix: null,
    fuse_unk: false,
    byte_fallback: false,
    ignore_merges: ignoreMerges,
    vocab,
    merges: pairs ? merges : merges.map(([a, b]) => `${a} ${b}`),
  };
}

const added = (id, content, extra = {}) => ({
  id,
  content,
  single_word: false,
  lstrip: false,
  rstrip: false,
  normalized: false,
  special: true,
  ...extra,
});

const byteLevelPre = (extra = {}) => ({
  type: "ByteLevel",
  add_prefix_space: false,
  trim_offsets: true,
  use_regex: true,
  ...extra,
});

function tokenizerJson({ model, normalizer = null, pre_tokenizer = null, added_tokens = [], post_processor = null }) {
  return {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens,
    normalizer,
    pre_tokenizer,
    post_processor,
    decoder: null,
    model,
  };
}

function gpt2Like(options, extra) {
  const model = byteLevelModel(options);
  const n = Object.keys(model.vocab).length;
  return {
    json: tokenizerJson({
      model,
      added_tokens: [added(n, "<|endoftext|>")],
      ...extra,
    }),
    config: { bos_token: "<|endoftext|>", eos_token: "<|endoftext|>", add_bos_token: false },
  };
}

function llama3Like(pattern, normalizer) {
  const model = byteLevelModel({ merges: 400, pairs: true, ignoreMerges: true });
  const n = Object.keys(model.vocab).length;
  return {
    json: tokenizerJson({
      model,
      normalizer,
      pre_tokenizer: {
        type: "Sequence",
        pretokenizers: [
          { type: "Split", pattern: { Regex: pattern }, behavior: "Isolated", invert: false },
          byteLevelPre({ use_regex: false, trim_offsets: false }),
        ],
      },
      added_tokens: [
        added(n, "<|begin_of_text|>"),
        added(n + 1, "<|eot_id|>"),
        added(n + 2, "<tool>", { special: false, normalized: true, lstrip: true, rstrip: true }),
      ],
      post_processor: {
        type: "TemplateProcessing",
        single: [{ SpecialToken: { id: "<|begin_of_text|>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }],
        pair: [],
        special_tokens: { "<|begin_of_text|>": { id: "<|begin_of_text|>", ids: [n], tokens: ["<|begin_of_text|>"] } },
      },
    }),
    config: { bos_token: "<|begin_of_text|>", eos_token: "<|eot_id|>" },
  };
}

// ---- SentencePiece-style BPE with byte fallback, trained here ----

function sentencePieceModel() {
  const vocab = { "<unk>": 0, "<s>": 1, "</s>": 2 };
  for (let b = 0; b < 256; ++b) vocab[`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`] = 3 + b;
  const text = "\u2581" + TRAINING.replaceAll(" ", "\u2581");
  const counts = new Map();
  for (const c of text) counts.set(c, (counts.get(c) ?? 0) + 1);
  // Characters seen often enough, but never emoji or CJK: those must fall
  // back to bytes.
  const chars = [...counts]
    .filter(([c, n]) => n >= 3 && !/[\p{Extended_Pictographic}\p{Script=Han}\p{Script=Hangul}]/u.test(c))
    .sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1))
    .map(([c]) => c);
  for (const c of chars) if (!(c in vocab)) vocab[c] = Object.keys(vocab).length;
  // Merges within ▁-words (SentencePiece's pieces never span two words).
  const pieces = text.split(/(?=\u2581)/u).filter((p) => p.length > 0);
  const words = countWords(pieces).map(([s, n]) => [s.filter((c) => c in vocab), n]);
  const merges = trainMerges(words, 300, vocab);
  return {
    type: "BPE",
    dropout: null,
    unk_token: "<unk>",
    continuing_subword_prefix: null,
    end_of_word_suffix: null,
    fuse_unk: true,
    byte_fallback: true,
    ignore_merges: false,
    vocab,
    merges: merges.map(([a, b]) => `${a} ${b}`),
  };
}

function sentencePieceLike(normalizer, pre_tokenizer) {
  return {
    json: tokenizerJson({
      model: sentencePieceModel(),
      normalizer,
      pre_tokenizer,
      added_tokens: [added(0, "<unk>"), added(1, "<s>"), added(2, "</s>")],
    }),
    config: { bos_token: "<s>", eos_token: "</s>", unk_token: "<unk>", add_bos_token: true, add_eos_token: false },
  };
}

const LEGACY_NORMALIZER = {
  type: "Sequence",
  normalizers: [
    { type: "Prepend", prepend: "\u2581" },
    { type: "Replace", pattern: { String: " " }, content: "\u2581" },
  ],
};

// ---- Llama 3's real tokenizer, from llama3-tokenizer-js's data ----

async function llama3Real() {
  const { default: llama3 } = await load("llama3-tokenizer-js/bundle/llama3-tokenizer-with-baked-data.js");
  const vocab = {};
  const specials = [];
  llama3.vocabById.forEach((token, id) => {
    if (id < 128000) vocab[token] = id;
    else specials.push(added(id, token));
  });
  const merges = [...llama3.merges].sort((x, y) => x[1] - y[1]).map(([key]) => key);
  const model = {
    type: "BPE",
    dropout: null,
    unk_token: null,
    continuing_subword_prefix: null,
    end_of_word_suffix: null,
    fuse_unk: false,
    byte_fallback: false,
    ignore_merges: true,
    vocab,
    merges,
  };
  return {
    llama3,
    json: tokenizerJson({
      model,
      pre_tokenizer: {
        type: "Sequence",
        pretokenizers: [
          { type: "Split", pattern: { Regex: LLAMA3_PATTERN }, behavior: "Isolated", invert: false },
          byteLevelPre({ use_regex: false }),
        ],
      },
      added_tokens: specials,
      post_processor: {
        type: "Sequence",
        processors: [
          { type: "ByteLevel", add_prefix_space: true, trim_offsets: false, use_regex: true },
          {
            type: "TemplateProcessing",
            single: [{ SpecialToken: { id: "<|begin_of_text|>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }],
            pair: [],
            special_tokens: {
              "<|begin_of_text|>": { id: "<|begin_of_text|>", ids: [128000], tokens: ["<|begin_of_text|>"] },
            },
          },
        ],
      },
    }),
    config: { bos_token: "<|begin_of_text|>", eos_token: "<|end_of_text|>" },
  };
}

// Non-ASCII numerals out: Hugging Face's JS Digits pre-tokenizer matches
// ASCII digits only, the Rust one every numeric character.
const asciiDigitsOnly = (t) => t.replace(/[^\P{N}0-9]/gu, "");

async function prepare() {
  fs.mkdirSync(work, { recursive: true });
  const real = await llama3Real();
  const tokenizers = {
    "gpt2-style": gpt2Like({ merges: 400, pairs: false, ignoreMerges: false }, { pre_tokenizer: byteLevelPre() }),
    "gpt2-prefix-space": gpt2Like(
      { merges: 300, pairs: false, ignoreMerges: false },
      { pre_tokenizer: byteLevelPre({ add_prefix_space: true }) },
    ),
    "llama3-style": llama3Like(LLAMA3_PATTERN, null),
    "qwen2-style": llama3Like(QWEN2_PATTERN, { type: "NFC" }),
    "smollm-style": gpt2Like(
      { merges: 300, pairs: true, ignoreMerges: false },
      {
        pre_tokenizer: {
          type: "Sequence",
          pretokenizers: [{ type: "Digits", individual_digits: true }, byteLevelPre()],
        },
      },
    ),
    "split-removed": gpt2Like(
      { merges: 200, pairs: false, ignoreMerges: false },
      {
        normalizer: { type: "Sequence", normalizers: [{ type: "NFKC" }] },
        pre_tokenizer: {
          type: "Sequence",
          pretokenizers: [
            { type: "Split", pattern: { Regex: "\\s+" }, behavior: "Removed", invert: false },
            byteLevelPre({ use_regex: false }),
          ],
        },
      },
    ),
    "sentencepiece-legacy": sentencePieceLike(LEGACY_NORMALIZER, null),
    "metaspace-first": sentencePieceLike(null, {
      type: "Metaspace",
      replacement: "\u2581",
      prepend_scheme: "first",
      split: false,
    }),
    "metaspace-always": sentencePieceLike(null, {
      type: "Metaspace",
      replacement: "\u2581",
      prepend_scheme: "always",
      split: false,
    }),
    "llama3-real": real,
  };

  const cases = [];
  const disagreements = [];
  for (const [name, t] of Object.entries(tokenizers)) {
    const dir = path.join(work, name);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, "tokenizer.json"), JSON.stringify(t.json));
    fs.writeFileSync(path.join(dir, "tokenizer_config.json"), JSON.stringify(t.config));
    const tokenizer = new Tokenizer(t.json, t.config);
    const texts = name === "smollm-style" ? TEXTS.map(asciiDigitsOnly) : TEXTS;
    const ids = texts.map((text) => tokenizer.encode(text, { add_special_tokens: false }).ids);
    cases.push({ name, dir, texts, ids });
    if (name === "llama3-real") {
      // The second reference: llama3-tokenizer-js's own encoder.
      texts.forEach((text, i) => {
        const other = t.llama3.encode(text, { bos: false, eos: false });
        if (JSON.stringify(other) !== JSON.stringify(ids[i])) disagreements.push({ text, hf: ids[i], llama3js: other });
      });
    }
  }
  fs.writeFileSync(path.join(work, "cases.json"), JSON.stringify({ cases }));
  if (disagreements.length > 0) {
    console.error(`the two JS references disagree on ${disagreements.length} Llama 3 texts, e.g.`);
    console.error(JSON.stringify(disagreements.slice(0, 3)));
    process.exit(1);
  }

  // Documents for `saturn tokenize`: JSON Lines and a text file, and the
  // token files' ids: per document [BOS] ids EOS.
  const corpus = path.join(work, "corpus");
  fs.mkdirSync(corpus, { recursive: true });
  const docs = [...FIXED_TEXTS.filter((t) => t.length > 0), ...randomTexts(60, 99).filter((t) => t.length > 0)];
  fs.writeFileSync(
    path.join(corpus, "docs.jsonl"),
    docs.map((text, i) => JSON.stringify({ id: i, text })).join("\n") + "\n",
  );
  const plain = "A plain text file.\nIt is one document, with a <|eot_id|> inside and ünïcödé 😀.\n";
  fs.writeFileSync(path.join(corpus, "plain.txt"), plain);
  const expected = {};
  for (const name of ["llama3-real", "gpt2-style", "sentencepiece-legacy", "qwen2-style"]) {
    const t = tokenizers[name];
    const tokenizer = new Tokenizer(t.json, t.config);
    const id = (token) => tokenizer.token_to_id(token);
    const addBos = name === "llama3-real" || name === "qwen2-style" || t.config.add_bos_token === true;
    const out = [];
    for (const text of [...docs, plain]) {
      if (addBos) out.push(id(t.config.bos_token));
      out.push(...tokenizer.encode(text, { add_special_tokens: false }).ids);
      out.push(id(t.config.eos_token));
    }
    const vocab = [...Object.values(t.json.model.vocab), ...t.json.added_tokens.map((a) => a.id)].reduce((a, b) => Math.max(a, b)) + 1;
    expected[name] = { vocab, ids: out };
  }
  fs.writeFileSync(path.join(work, "expected_files.json"), JSON.stringify(expected));
  console.log(
    `wrote ${cases.length} tokenizers x ${TEXTS.length} texts (${cases.reduce((n, c) => n + c.ids.flat().length, 0)} ids) to ${work}`,
  );
}

// A token file's ids, read by this independent reader of Contract 5's layout.
function readTokenFile(file) {
  const bytes = fs.readFileSync(file);
  const magic = Buffer.from([0xff, 0xff, 0x53, 0x41, 0x54, 0x54, 0x4f, 0x4b]);
  if (bytes.length >= 16 && bytes.subarray(0, 8).equals(magic)) {
    const version = bytes.readUInt16LE(8);
    const idBytes = bytes.readUInt16LE(10);
    const vocab = bytes.readUInt32LE(12);
    if (version !== 1 || (idBytes !== 2 && idBytes !== 4)) throw new Error(`bad header: ${version} ${idBytes}`);
    const ids = [];
    for (let i = 16; i < bytes.length; i += idBytes) ids.push(idBytes === 2 ? bytes.readUInt16LE(i) : bytes.readUInt32LE(i));
    return { header: true, idBytes, vocab, ids };
  }
  const ids = [];
  for (let i = 0; i < bytes.length; i += 2) ids.push(bytes.readUInt16LE(i));
  return { header: false, idBytes: 2, vocab: null, ids };
}

function checkFile() {
  const [name, file] = rest;
  const expected = JSON.parse(fs.readFileSync(path.join(work, "expected_files.json"), "utf8"))[name];
  const got = readTokenFile(file);
  const wantUint32 = expected.vocab > 65536;
  const problems = [];
  if (wantUint32 && !(got.header && got.idBytes === 4 && got.vocab === expected.vocab))
    problems.push(`expected a uint32 file with a header for vocabulary ${expected.vocab}, got ${JSON.stringify({ ...got, ids: undefined })}`);
  if (!wantUint32 && got.header) problems.push("expected a headerless uint16 file");
  if (got.ids.length !== expected.ids.length) problems.push(`${got.ids.length} ids, expected ${expected.ids.length}`);
  const at = got.ids.findIndex((id, i) => id !== expected.ids[i]);
  if (at >= 0) problems.push(`first difference at id ${at}: got ${got.ids.slice(at, at + 8)}, expected ${expected.ids.slice(at, at + 8)}`);
  if (problems.length > 0) {
    console.error(`${file} (${name}): ${problems.join("; ")}`);
    process.exit(1);
  }
  console.log(`${file}: ${got.ids.length} ids as the JS reference gives them (${got.header ? "uint32 with header" : "uint16"})`);
}

if (command === "prepare") await prepare();
else if (command === "check-file") checkFile();
else {
  console.error(`unknown command ${command}`);
  process.exit(2);
}
