// The one place where built-in model families are registered. To add one:
// write models/<name>.cc defining Make<Name>Family(), declare it here and
// register it below.
#include "engine/model.h"

namespace saturn::engine {

std::unique_ptr<ModelFamily> MakeGptFamily();
std::unique_ptr<ModelFamily> MakeGpt2Family();
std::unique_ptr<ModelFamily> MakeLlamaFamily();
std::unique_ptr<ModelFamily> MakeVitFamily();
std::unique_ptr<ModelFamily> MakeResnetFamily();
std::unique_ptr<ModelFamily> MakeMlpFamily();
std::unique_ptr<ModelFamily> MakeTorchScriptFamily();

void RegisterBuiltinModels(ModelRegistry& registry) {
  registry.Register(MakeGptFamily());
  registry.Register(MakeGpt2Family());
  registry.Register(MakeLlamaFamily());
  registry.Register(MakeVitFamily());
  registry.Register(MakeResnetFamily());
  registry.Register(MakeMlpFamily());
  registry.Register(MakeTorchScriptFamily());
}

}  // namespace saturn::engine
