// saturn worker ...: runs saturn-worker (the training engine, docs/worker.md)
// with the same arguments, so users and batch scripts need one program name.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "cli/commands.h"
#include "launch/worker.h"

namespace saturn {

void AddWorkerCommand(CLI::App& app, int* status) {
  auto args = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = app.add_subcommand(
      "worker",
      "Run the training worker (internal; see docs/worker.md): saturn worker search|execute ...");
  cmd->allow_extras();
  cmd->prefix_command();
  cmd->callback([cmd, status] {
    std::string worker = FindWorkerBinary();
    std::vector<std::string> rest = cmd->remaining();
    std::vector<char*> argv = {worker.data()};
    for (std::string& a : rest)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    std::fflush(nullptr);
    ::execv(worker.c_str(), argv.data());
    std::fprintf(stderr, "saturn: error: cannot run %s: %s\n", worker.c_str(),
                 std::strerror(errno));
    *status = 1;
  });
  (void)args;
}

}  // namespace saturn
