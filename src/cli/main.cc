// cincinnati: command-line entry point. Subcommands:
//   graph build       the graph builder's graph from releases + graph-data
//   graph filter      a policy-engine view (channel, arch) of a graph
//   graph-data check  lint a graph-data directory
//   graph-builder     the graph builder service
//   policy-engine     the policy engine service
//   serve             both in one process
//   release new|info  publish and inspect release images
#include <iostream>
#include <string_view>

#include "cli/commands.h"
#include "cli/did_you_mean.h"
#include "cli/fleet_commands.h"

namespace {

std::string VersionText() {
  return std::string("cincinnati ") + CINCINNATI_VERSION + "\ncommit " + CINCINNATI_GIT_COMMIT + "\nbuild " +
         (std::string(CINCINNATI_BUILD_TYPE).empty() ? "unspecified" : CINCINNATI_BUILD_TYPE);
}

// `graph ...` (the graph builder's one-off commands) needs no other command: building
// the others' options was a tenth of a `graph build` (every flag, default and help
// string of every service). Help and suggestions for `graph ...` only name graph
// commands anyway.
bool OnlyGraphCommandsNeeded(int argc, char** argv) { return argc >= 3 && std::string_view(argv[1]) == "graph"; }

void RegisterOtherCommands(CLI::App& app, int& exit_code) {
  cincinnati::cli::RegisterGraphDataCommands(app, exit_code);
  cincinnati::cli::RegisterServiceCommands(app, exit_code);
  cincinnati::cli::RegisterReleaseCommands(app, exit_code);
  cincinnati::cli::RegisterRolloutCommands(app, exit_code);
  cincinnati::cli::RegisterClusterCommands(app, exit_code);
  cincinnati::cli::RegisterAgentCommands(app, exit_code);
  cincinnati::cli::RegisterAdmCommands(app, exit_code);
  cincinnati::cli::RegisterUpgradeCommands(app, exit_code);
  cincinnati::cli::RegisterInsightCommands(app, exit_code);
  cincinnati::cli::RegisterFleetCommands(app, exit_code);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Cincinnati update graph service and tools"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every subcommand");
  app.set_version_flag("--version", VersionText(), "Print the version, the git commit and the build type");
  int exit_code = 0;
  cincinnati::cli::SetCommandLine(argc, argv);
  cincinnati::cli::RegisterGraphCommands(app, exit_code);
  if (!OnlyGraphCommandsNeeded(argc, argv)) RegisterOtherCommands(app, exit_code);
  cincinnati::cli::StateExitStatuses(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cincinnati::cli::ReportParseError(app, e);
  }
  return exit_code;
}
