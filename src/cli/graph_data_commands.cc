#include <iostream>

#include <fmt/format.h>

#include "builder/graph_data_image_source.h"
#include "cli/commands.h"
#include "graph-data/lint.h"
#include "registry/release_image.h"

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

  struct PushArgs {
    std::string dir, to, username, password, ca_dir;
    bool force = false;
  };
  auto push_args = std::make_shared<PushArgs>();
  CLI::App* push = graph_data->add_subcommand(
      "push", "Build a graph-data image from a directory (the files the update service reads) and push it");
  push->add_option("dir", push_args->dir, "Graph-data directory")->required()->check(CLI::ExistingDirectory);
  push->add_option("--to", push_args->to, "Destination image, e.g. quay.io/org/graph-data:latest")->required();
  push->add_option("--username", push_args->username, "Registry user");
  push->add_option("--password", push_args->password, "Registry password");
  push->add_option("--root-certificate-dir", push_args->ca_dir, "Extra trusted certificates (*.pem, *.crt)");
  push->add_flag("--force", push_args->force, "Push even when `graph-data check` finds errors");
  push->callback([push_args, &exit_code] {
    const PushArgs& a = *push_args;
    Diagnostics found = graphdata::CheckGraphData(a.dir);
    if (found.Count(Diagnostic::Severity::kError) && !a.force) {
      PrintDiagnostics(found, false);
      std::cerr << "error: " << a.dir << " has errors; fix them or use --force\n";
      exit_code = 1;
      return;
    }
    auto run = [&]() -> Result<std::string> {
      CINCINNATI_ASSIGN_OR_RETURN(registry::ImageReference ref, registry::ParseImageReference(a.to));
      if (ref.tag.empty()) return Status::InvalidArgument(fmt::format("--to '{}': a tag is required", a.to));
      CINCINNATI_ASSIGN_OR_RETURN(std::vector<registry::LayerEntry> all, registry::DirectoryEntries(a.dir));
      std::vector<registry::LayerEntry> files;
      GraphDataImageSettings defaults;
      for (auto& e : all) {
        if (AllowListed(defaults.output_allowlist, e.path)) files.push_back(std::move(e));
      }
      CINCINNATI_ASSIGN_OR_RETURN(registry::Layer layer, registry::MakeLayer(files));
      registry::RegistryClient client(ref.location, {a.username, a.password}, {.ca_path = a.ca_dir});
      CINCINNATI_ASSIGN_OR_RETURN(std::string digest, registry::PushImage(client, ref.tag, "amd64", {layer}));
      return ref.location.PullSpecPrefix() + "@" + digest;
    };
    auto pushed = run();
    if (!pushed.ok()) {
      std::cerr << "error: " << pushed.status().message() << '\n';
      exit_code = 1;
      return;
    }
    std::cout << *pushed << '\n';
  });
}

}  // namespace cincinnati::cli
