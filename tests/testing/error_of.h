// The spec tests' helper: the InputError message of a call.
#pragma once

#include <string>

#include "common/error.h"

namespace saturn::testing_spec {

// The InputError message of `f`, or "" if it does not throw one.
template <typename F>
std::string ErrorOf(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace saturn::testing_spec
