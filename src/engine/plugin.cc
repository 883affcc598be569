#include "engine/plugin.h"

#include <dlfcn.h>

#include <filesystem>

#include "common/error.h"

namespace saturn::engine {
namespace {

using VersionFn = int (*)();
using TorchVersionFn = const char* (*)();
using RegisterFn = void (*)(TechniqueRegistry*);

template <typename Fn>
Fn Symbol(void* handle, const char* name) {
  return reinterpret_cast<Fn>(dlsym(handle, name));
}

}  // namespace

std::vector<std::string> LoadTechniquePlugin(const std::string& path, TechniqueRegistry& registry) {
  auto fail = [&](const std::string& message) { throw InputError(path, 0, "", message); };
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) fail("technique plug-in not found");
  // RTLD_NOW: a plug-in with unresolved symbols (built against another
  // engine) fails here, not in the middle of training.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    fail(std::string("cannot load technique plug-in: ") + (why ? why : "unknown error"));
  }
  auto version = Symbol<VersionFn>(handle, "saturn_technique_api_version");
  auto torch_version = Symbol<TorchVersionFn>(handle, "saturn_technique_torch_version");
  auto register_fn = Symbol<RegisterFn>(handle, "saturn_register_techniques");
  if (version == nullptr || torch_version == nullptr || register_fn == nullptr) {
    dlclose(handle);
    fail(
        "not a Saturn technique plug-in: it does not export saturn_technique_api_version, "
        "saturn_technique_torch_version and saturn_register_techniques (define them with "
        "SATURN_TECHNIQUE_PLUGIN from engine/plugin.h)");
  }
  if (int v = version(); v != SATURN_TECHNIQUE_API_VERSION) {
    dlclose(handle);
    fail("technique plug-in built against API version " + std::to_string(v) +
         "; this Saturn has version " + std::to_string(SATURN_TECHNIQUE_API_VERSION) +
         " (rebuild the plug-in against this Saturn's src/engine/plugin.h)");
  }
  if (std::string tv = torch_version(); tv != SATURN_TECHNIQUE_TORCH_VERSION) {
    dlclose(handle);
    fail("technique plug-in built against LibTorch " + tv + "; this Saturn uses LibTorch " +
         SATURN_TECHNIQUE_TORCH_VERSION + " (rebuild the plug-in)");
  }
  std::vector<std::string> before = registry.Names();
  try {
    register_fn(&registry);
  } catch (const InputError& e) {
    fail(std::string("technique plug-in failed to register: ") + e.what());
  }
  // The library stays loaded for the life of the process: its techniques'
  // code and vtables live in it.
  std::vector<std::string> names = registry.Names();
  names.erase(names.begin(), names.begin() + static_cast<long>(before.size()));
  if (names.empty()) fail("technique plug-in registered no technique");
  return names;
}

}  // namespace saturn::engine
