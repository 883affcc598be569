// The one place where built-in techniques are registered. To add one: write
// techniques/<name>.cc defining Make<Name>Technique(), declare it here and
// register it below.
#include "engine/technique.h"

namespace saturn::engine {

std::unique_ptr<Technique> MakeSingleTechnique();
std::unique_ptr<Technique> MakeDdpTechnique();
std::unique_ptr<Technique> MakeFsdpTechnique();
std::unique_ptr<Technique> MakePipelineTechnique();
std::unique_ptr<Technique> MakeSpillTechnique();
std::unique_ptr<Technique> MakeTpTechnique();
std::unique_ptr<Technique> MakeTpDdpTechnique();
std::unique_ptr<Technique> MakePipelineTpTechnique();

void RegisterBuiltinTechniques(TechniqueRegistry& registry) {
  registry.Register(MakeSingleTechnique());
  registry.Register(MakeDdpTechnique());
  registry.Register(MakeFsdpTechnique());
  registry.Register(MakePipelineTechnique());
  registry.Register(MakeSpillTechnique());
  registry.Register(MakeTpTechnique());
  registry.Register(MakeTpDdpTechnique());
  registry.Register(MakePipelineTpTechnique());
}

}  // namespace saturn::engine
