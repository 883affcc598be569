// The LibTorch version the engine is compiled against, for the few places
// where APIs differ between 1.13 and 2.x (docs/gpus.md lists them).
//
//   #if SATURN_TORCH_AT_LEAST(2, 4)
//     at::autocast::set_autocast_enabled(at::kCUDA, true);
//   #else
//     at::autocast::set_enabled(true);
//   #endif
#pragma once

#include <torch/version.h>

#define SATURN_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||         \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))
