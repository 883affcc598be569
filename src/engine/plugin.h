// The technique plug-in API: everything a user technique needs, and the
// versioned entry point Saturn looks for in a plug-in (a shared library).
//
// A technique is a Technique subclass (engine/technique.h: Search + Execute,
// or just SearchSpace + MakeTrainer and a Trainer with Step/Save/Load); its
// Trainer works with the TrainContext (task, model blocks, data, optimizer,
// device with metered memory, communicator) and usually holds its blocks in a
// BlockSet (engine/blocks.h), which also reads and writes its part of a
// portable checkpoint. Those two headers and what they include are the whole
// API. A plug-in registers its techniques in one function:
//
//   #include "engine/plugin.h"
//   namespace { class LocalSgd final : public saturn::engine::Technique { ... }; }
//   SATURN_TECHNIQUE_PLUGIN(registry) {
//     registry.Register(std::make_unique<LocalSgd>());
//   }
//
// and is built as a shared library against the same Saturn and LibTorch:
//
//   g++ -std=c++20 -O2 -shared -fPIC -DUSE_C10D_GLOO -I<saturn>/src
//       -I/usr/include/torch/csrc/api/include local_sgd.cc -o liblocal_sgd.so
//
// (or in CMake: target_link_libraries(my_plugin PRIVATE saturn_technique_api)).
// It is loaded by `saturn-worker --plugin lib.so` (the profiler and executor
// pass the workload's `plugins:` and `--plugin` on). A plug-in built against
// another API version, or another LibTorch version, is refused before any of
// its code runs: the macro also exports both versions.
//
// Loading (saturn-worker does this):
//   LoadTechniquePlugin("/path/liblocal_sgd.so", Techniques());  // InputError if refused
#pragma once

#include <torch/version.h>

#include <string>

#include "engine/blocks.h"
#include "engine/technique.h"

// Bump whenever anything in technique.h, blocks.h or the headers they include
// changes in a way that breaks compiled plug-ins.
#define SATURN_TECHNIQUE_API_VERSION 4

#define SATURN_TECHNIQUE_API_STRINGIFY2(x) #x
#define SATURN_TECHNIQUE_API_STRINGIFY(x) SATURN_TECHNIQUE_API_STRINGIFY2(x)
// The LibTorch a plug-in was compiled against ("1.13.0"); it must match the
// worker's, since techniques pass tensors and autograd state across.
#define SATURN_TECHNIQUE_TORCH_VERSION                                                        \
  SATURN_TECHNIQUE_API_STRINGIFY(TORCH_VERSION_MAJOR)                                         \
  "." SATURN_TECHNIQUE_API_STRINGIFY(TORCH_VERSION_MINOR) "." SATURN_TECHNIQUE_API_STRINGIFY( \
      TORCH_VERSION_PATCH)

// Defines the plug-in's entry points; the body registers its techniques in
// `registry` (a saturn::engine::TechniqueRegistry&).
#define SATURN_TECHNIQUE_PLUGIN(registry)                                                          \
  static void SaturnRegisterTechniquesImpl(::saturn::engine::TechniqueRegistry& registry);         \
  extern "C" __attribute__((visibility("default"))) int saturn_technique_api_version() {           \
    return SATURN_TECHNIQUE_API_VERSION;                                                           \
  }                                                                                                \
  extern "C" __attribute__((visibility("default"))) const char* saturn_technique_torch_version() { \
    return SATURN_TECHNIQUE_TORCH_VERSION;                                                         \
  }                                                                                                \
  extern "C" __attribute__((visibility("default"))) void saturn_register_techniques(               \
      ::saturn::engine::TechniqueRegistry* r) {                                                    \
    SaturnRegisterTechniquesImpl(*r);                                                              \
  }                                                                                                \
  static void SaturnRegisterTechniquesImpl(::saturn::engine::TechniqueRegistry& registry)

namespace saturn::engine {

// Loads a plug-in and registers its techniques in `registry`. InputError
// naming the file when it cannot be loaded, lacks the entry points, was built
// for another API or LibTorch version, or registers a name already taken.
// Returns the names it registered.
std::vector<std::string> LoadTechniquePlugin(const std::string& path, TechniqueRegistry& registry);

}  // namespace saturn::engine
