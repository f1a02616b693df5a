// Subcommand registration for the `cincinnati` executable. Each Register* adds a
// subcommand to the CLI11 app and sets the exit code through `exit_code` when run.
#pragma once

#include <CLI/CLI.hpp>

#include "core/diagnostics.h"

namespace cincinnati::cli {

void RegisterGraphCommands(CLI::App& app, int& exit_code);
void RegisterGraphDataCommands(CLI::App& app, int& exit_code);
void RegisterServiceCommands(CLI::App& app, int& exit_code);
void RegisterReleaseCommands(CLI::App& app, int& exit_code);
void RegisterRolloutCommands(CLI::App& app, int& exit_code);
void RegisterClusterCommands(CLI::App& app, int& exit_code);
void RegisterAgentCommands(CLI::App& app, int& exit_code);
void RegisterAdmCommands(CLI::App& app, int& exit_code);
void RegisterUpgradeCommands(CLI::App& app, int& exit_code);
// The process's command line, kept for the agent's hand-over to a new release.
void SetCommandLine(int argc, char** argv);

// Prints diagnostics to stderr as "severity: location: message".
void PrintDiagnostics(const Diagnostics& diagnostics, bool include_info);

}  // namespace cincinnati::cli
