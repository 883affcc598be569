// The `saturn` subcommands. Each Add*Command registers its flags on the app
// and a callback that does the work and stores the exit status in *status
// (0 success, 2 bad input, 1 the system refused or an internal failure).
// Errors are thrown as InputError (bad input), SystemError (a full disk, a
// service not there: "error: <reason>") or any other exception (internal),
// and turned into messages and exit codes in main.cc only.
#pragma once

#include <CLI/CLI.hpp>

namespace saturn {

void AddPlanCommand(CLI::App& app, int* status);
void AddValidateCommand(CLI::App& app, int* status);
void AddSimulateCommand(CLI::App& app, int* status);
void AddProfileCommand(CLI::App& app, int* status);
void AddRunCommand(CLI::App& app, int* status);
void AddWorkerCommand(CLI::App& app, int* status);
void AddTokenizeCommand(CLI::App& app, int* status);
// serve, submit, status, cancel, wait
void AddServiceCommands(CLI::App& app, int* status);

}  // namespace saturn
