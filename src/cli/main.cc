// saturn: train many models at once, planned to finish as early as possible.
// See README.md and docs/ for the commands; `saturn --help` lists them.
//
// Every error is one line on stderr (README, "Exit status"): bad input —
// options, files, fields — "saturn: error: ..." and exit 2; what the system
// refuses (a full disk, a service not there) "saturn: error: ..." and exit 1;
// anything else "saturn: internal error: ..." and exit 1 (a bug).
#include <cstdio>
#include <exception>
#include <string>

#include "cli/commands.h"
#include "common/error.h"

int main(int argc, char** argv) {
  CLI::App app{"Saturn: profile, plan and train many models at once on a GPU cluster"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "saturn 0.1.0");
  int status = 0;
  saturn::AddRunCommand(app, &status);
  saturn::AddProfileCommand(app, &status);
  saturn::AddPlanCommand(app, &status);
  saturn::AddValidateCommand(app, &status);
  saturn::AddSimulateCommand(app, &status);
  saturn::AddServiceCommands(app, &status);
  saturn::AddWorkerCommand(app, &status);
  saturn::AddTokenizeCommand(app, &status);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Bad input like any other (exit 2, "saturn: error:"; README, "Exit status").
    std::string command = "saturn";
    for (const CLI::App* sub : app.get_subcommands())
      command += " " + sub->get_name();
    std::fprintf(stderr, "saturn: error: %s (%s --help lists the options)\n", e.what(),
                 command.c_str());
    return 2;
  } catch (const saturn::InputError& e) {
    std::fprintf(stderr, "saturn: error: %s\n", e.what());
    return 2;
  } catch (const saturn::SystemError& e) {
    std::fprintf(stderr, "saturn: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "saturn: internal error: %s\n", e.what());
    return 1;
  }
  return status;
}
