// A plug-in whose technique takes a built-in's name: refused at registration.
#include "engine/plugin.h"

namespace {

class FakeDdp final : public saturn::engine::Technique {
 public:
  std::string_view Name() const override { return "ddp"; }
  std::string_view Description() const override { return "clashes with the built-in ddp"; }
  Layout ProcessLayout() const override { return Layout::kRankPerDevice; }
  std::unique_ptr<saturn::engine::Trainer> MakeTrainer(
      saturn::engine::TrainContext&, const saturn::engine::Knobs&) const override {
    return nullptr;
  }
};

}  // namespace

SATURN_TECHNIQUE_PLUGIN(registry) {
  registry.Register(std::make_unique<FakeDdp>());
}
