// The one place early-stopping rules are registered. To add a rule: write
// tune/<name>.cc defining Make<Name>Rule(spec), declare it here and register
// it below.
#include "tune/early_stop.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"

namespace saturn {

std::unique_ptr<StopRule> MakeAshaRule(const EarlyStopSpec& spec);
std::unique_ptr<StopRule> MakeMedianRule(const EarlyStopSpec& spec);

namespace {

void Add(StopRuleRegistry& registry, std::string name,
         std::function<std::unique_ptr<StopRule>(const EarlyStopSpec&)> make) {
  registry.Register(std::make_unique<StopRuleKind>(StopRuleKind{std::move(name), std::move(make)}));
}

}  // namespace

const StopRuleRegistry& StopRules() {
  static const StopRuleRegistry* registry = [] {
    auto* r = new StopRuleRegistry;
    Add(*r, "asha", MakeAshaRule);
    Add(*r, "median", MakeMedianRule);
    return r;
  }();
  return *registry;
}

std::vector<std::string> StopRuleNames() {
  return StopRules().Names();
}

std::unique_ptr<StopRule> MakeStopRule(const EarlyStopSpec& spec) {
  const StopRuleKind& kind = StopRules().Get(spec.rule);
  if (spec.metric != "eval_loss" && spec.metric != "eval_accuracy") {
    throw InputError("", 0, "early_stop." + spec.rule + ".metric",
                     "expected eval_loss or eval_accuracy, got " + Quote(spec.metric));
  }
  return kind.make(spec);
}

}  // namespace saturn
