#include <iostream>

#include "cli/commands.h"
#include "graph-data/lint.h"

namespace cincinnati::cli {

void RegisterGraphDataCommands(CLI::App& app, int& exit_code) {
  CLI::App* graph_data = app.add_subcommand("graph-data", "Work with graph-data directories");
  graph_data->require_subcommand(1);

  auto dir = std::make_shared<std::string>();
  CLI::App* check = graph_data->add_subcommand(
      "check", "Report every problem in a graph-data directory; exit 1 if there are errors");
  check->add_option("dir", *dir, "Graph-data directory")->required();
  check->callback([dir, &exit_code] {
    Diagnostics found = graphdata::CheckGraphData(*dir);
    PrintDiagnostics(found, true);
    size_t errors = found.Count(Diagnostic::Severity::kError);
    size_t warnings = found.Count(Diagnostic::Severity::kWarning);
    std::cerr << *dir << ": " << errors << " error(s), " << warnings << " warning(s)\n";
    exit_code = errors ? 1 : 0;
  });
}

}  // namespace cincinnati::cli
