// The tests' helper for errors: the message of the exception a call throws,
// so that a test pins what the user reads, not only the exception's type.
//
//   EXPECT_THAT(ErrorOf([&] { ParseManifest("[]", "m"); }), HasSubstr("m: expected"));
//   EXPECT_EQ(ErrorOf<std::runtime_error>([&] { ... }), "");   // does not throw one
#pragma once

#include <stdexcept>
#include <string>

#include "common/error.h"

namespace saturn::test {

// The message of the `E` that `f` throws, or "" if it throws none.
template <typename E = InputError, typename F>
std::string ErrorOf(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

}  // namespace saturn::test
