// saturn validate: checks a plan against a cluster and profile, independently
// of every solver (planner/validate.h). Exit 0 if valid, 2 with one line per
// violation if not.
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "common/format.h"
#include "contracts/cluster.h"
#include "contracts/plan.h"
#include "contracts/profile.h"
#include "planner/packing.h"
#include "planner/validate.h"

namespace saturn {
namespace {

struct ValidateOptions {
  std::string cluster, profile, plan;
};

int RunValidate(const ValidateOptions& o) {
  Cluster cluster = LoadClusterFile(o.cluster);
  ProfileTable profile = LoadProfileFile(o.profile, cluster);
  Plan plan = LoadPlanFile(o.plan);
  // Packs are checked against the profile's pack columns (planner/packing.h).
  Problem problem = ProblemFromProfile(profile, cluster);
  PackTerms terms = PackTermsFromProfile(profile, problem, o.profile);
  std::vector<std::string> errors = ValidatePlan(problem, terms, plan);
  if (errors.empty()) {
    std::printf("%s: valid plan (%s, makespan %s)\n", o.plan.c_str(),
                Plural(static_cast<long>(plan.tasks.size()), "task").c_str(),
                FormatDuration(plan.makespan_s).c_str());
    return 0;
  }
  for (const std::string& e : errors)
    std::fprintf(stderr, "%s: %s\n", o.plan.c_str(), e.c_str());
  std::fprintf(stderr, "saturn: error: %s is not a valid plan (%zu problems)\n", o.plan.c_str(),
               errors.size());
  return 2;
}

}  // namespace

void AddValidateCommand(CLI::App& app, int* status) {
  auto o = std::make_shared<ValidateOptions>();
  CLI::App* cmd = app.add_subcommand("validate", "Check a plan against a cluster and profile");
  cmd->add_option("--cluster", o->cluster, "Cluster file (YAML)")->required();
  cmd->add_option("--profile", o->profile, "Profile table (CSV)")->required();
  cmd->add_option("--plan", o->plan, "Plan (JSON)")->required();
  cmd->callback([o, status] { *status = RunValidate(*o); });
}

}  // namespace saturn
