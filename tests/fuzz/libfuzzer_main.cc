// One libFuzzer binary per target (-DSATURN_FUZZ=ON, clang; scripts/fuzz.sh):
// SATURN_FUZZ_TARGET names it. An exception out of the target is a finding:
// printed, then abort(), so libFuzzer keeps the input as a crash.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const saturn::fuzz::Target* target = saturn::fuzz::FindTarget(SATURN_FUZZ_TARGET);
  if (!target) {
    std::fprintf(stderr, "no fuzz target %s\n", SATURN_FUZZ_TARGET);
    std::abort();
  }
  try {
    target->run(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "finding in %s: %s\n", SATURN_FUZZ_TARGET, e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "finding in %s: a non-standard exception\n", SATURN_FUZZ_TARGET);
    std::abort();
  }
  return 0;
}
