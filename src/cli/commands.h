// Subcommand registration for the `cincinnati` executable. Each Register* adds a
// subcommand to the CLI11 app and sets the exit code through `exit_code` when run.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <iostream>
#include <string>

#include "builder/pipeline.h"
#include "cli/settings.h"
#include "core/diagnostics.h"
#include "core/graph.h"
#include "core/status.h"

namespace cincinnati::cli {

// A command's result: an error is printed and makes the exit code 1.
inline void Report(const Status& st, int& exit_code) {
  if (st.ok()) return;
  std::cerr << "error: " << st.message() << '\n';
  exit_code = 1;
}

void RegisterGraphCommands(CLI::App& app, int& exit_code);
void RegisterGraphDataCommands(CLI::App& app, int& exit_code);
void RegisterServiceCommands(CLI::App& app, int& exit_code);
void RegisterReleaseCommands(CLI::App& app, int& exit_code);
void RegisterRolloutCommands(CLI::App& app, int& exit_code);
void RegisterClusterCommands(CLI::App& app, int& exit_code);
void RegisterAgentCommands(CLI::App& app, int& exit_code);
void RegisterComponentCommand(CLI::App& app, int& exit_code);  // component_command.cc, with the agent's
void RegisterAdmCommands(CLI::App& app, int& exit_code);
void RegisterUpgradeCommands(CLI::App& app, int& exit_code);
void RegisterInsightCommands(CLI::App& app, int& exit_code);
// `graph render` (insight_commands.cc), added to the `graph` command.
void AddGraphRender(CLI::App* graph, int& exit_code);
// The process's command line, kept for the agent's hand-over to a new release.
void SetCommandLine(int argc, char** argv);

// Prints diagnostics to stderr as "severity: location: message".
void PrintDiagnostics(const Diagnostics& diagnostics, bool include_info);

// `--disallowed-errors`, the same everywhere: its help and a check of each comma item.
inline constexpr const char* kDisallowedErrorsHelp =
    "Graph-data error classes that fail the build, comma-separated: file, deserialize, missing_extension, "
    "invalid_extension (default: none; such problems are warnings)";
CLI::Validator ErrorClassList();

// The graph-data source of `s` (graph_data, graph_data_image, graph_data_git, with
// graph_data_cache, graph_data_public_keys, graph_data_signatures) into `options`.
Status SetGraphDataSources(const Settings& s, LocalBuildOptions& options);

// The instant `--at` names (RFC 3339), or now when it is empty; errors name `--at`.
Result<int64_t> InstantOrNow(const std::string& at);
// Checks an `--at` value while the command line is parsed, so that a time that does not
// parse is a usage error (exit 2, with the help hint), not a failure of the command.
CLI::Validator InstantValidator();
// Checks that a flag's value is a non-negative integer (ports, seconds, bytes) at parse.
CLI::Validator UnsignedValidator();
// The graph builder's graph of local releases and a graph-data directory (the local chain).
Result<Graph> BuildLocalInputs(const std::string& releases, const std::string& graph_data);

}  // namespace cincinnati::cli
