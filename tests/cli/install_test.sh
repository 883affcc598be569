#!/usr/bin/env bash
# `cmake --install` gives a tree that works on its own: saturn in bin/ finds
# saturn-worker under libexec/saturn/ (no SATURN_WORKER, run from another
# folder), and the Python helpers, examples, docs and plug-in headers are
# where README says. Then the installed worker is moved away: saturn's
# error names the places it looked and SATURN_WORKER, and suggests no
# rebuild.
#   install_test.sh BUILD_DIR
set -euo pipefail
build=$1
prefix=$(mktemp -d /tmp/saturn-install-test-XXXXXX)
trap 'rm -rf "$prefix"' EXIT
fail() { echo "install_test: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/saturn libexec/saturn/saturn-worker share/saturn/python/saturn_task.py \
         share/saturn/python/saturn_models.py share/saturn/python/pyproject.toml \
         share/saturn/examples/quickstart/workload.yaml share/doc/saturn/README.md \
         share/doc/saturn/contracts.md include/saturn/engine/plugin.h include/saturn/common/registry.h; do
  [ -e "$prefix/$f" ] || fail "missing $f"
done

cd "$prefix"
unset SATURN_WORKER
techniques=$(bin/saturn worker techniques) || fail "installed saturn did not find its worker"
grep -q '"single"' <<<"$techniques" || fail "no techniques listed: $techniques"

mv libexec/saturn/saturn-worker libexec/saturn/moved-away
if out=$(bin/saturn worker techniques 2>&1); then fail "found a worker that is not there"; fi
grep -q "$prefix/libexec/saturn/saturn-worker" <<<"$out" || fail "error does not name libexec: $out"
grep -q "SATURN_WORKER" <<<"$out" || fail "error does not name SATURN_WORKER: $out"
if grep -q "build with" <<<"$out"; then fail "error suggests a rebuild: $out"; fi
SATURN_WORKER=$prefix/libexec/saturn/moved-away bin/saturn worker techniques >/dev/null ||
  fail "SATURN_WORKER was not followed"
echo "install_test: ok"
