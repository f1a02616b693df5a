#include <chrono>
#include <cmath>
#include <iostream>

#include <fmt/format.h>

#include "builder/graph_data_image_source.h"
#include "builder/graph_data_tarball.h"
#include "cli/commands.h"
#include "env/clock.h"
#include "graph-data/lint.h"
#include "graph-data/rollout_diff.h"
#include "graph-data/time_format.h"
#include "registry/release_image.h"

namespace cincinnati::cli {

namespace {

void RegisterCheck(CLI::App* graph_data, int& exit_code) {
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

struct DiffArgs {
  std::string old_dir, new_dir, at;
  bool force = false;
};

// `graph-data diff-check`; returns the exit code.
int RunDiffCheck(const DiffArgs& a) {
  int64_t at = env::UnixSeconds(env::RealClock());
  if (!a.at.empty()) {
    auto t = graphdata::ParseDateTime(a.at);
    if (!t.ok()) {
      std::cerr << "error: --at: " << t.status().message() << '\n';
      return 2;
    }
    at = *t;
  }
  Diagnostics ignored;
  auto before = graphdata::LoadGraphData(a.old_dir, {}, ignored);
  auto after = graphdata::LoadGraphData(a.new_dir, {}, ignored);
  for (const auto* r : {&before, &after}) {
    if (!r->ok()) {
      std::cerr << "error: " << r->status().message() << '\n';
      return 2;
    }
  }
  size_t blocking = 0;
  for (const graphdata::RolloutChange& c : graphdata::DiffRollouts(*before, *after, at)) {
    double flip = std::abs(c.new_share - c.old_share) * 100;
    std::string what = c.new_share < c.old_share ? "would lose it" : "would gain it at once";
    std::string edges = c.kind == "all" ? "" : fmt::format(" ({} edges)", c.kind);
    // --force lets everything through: what it lets through is a note, not an error.
    std::cerr << fmt::format("{}: {}: {}release {}, channel {}{}: {:.1f}% of clusters {} ({:.1f}% -> {:.1f}%){}\n",
                             c.locked || a.force ? "note" : "error", c.file, c.added ? "new " : "", c.release,
                             c.channel, edges, flip, what, c.old_share * 100, c.new_share * 100,
                             c.locked ? " [locked: allowed]" : (a.force ? " [--force: allowed]" : ""));
    blocking += !c.locked;
  }
  std::cerr << fmt::format("{} change(s) to rollouts in flight{}\n", blocking, blocking && a.force ? " (--force)" : "");
  return blocking && !a.force ? 1 : 0;
}

void RegisterDiffCheck(CLI::App* graph_data, int& exit_code) {
  auto diff_args = std::make_shared<DiffArgs>();
  CLI::App* diff = graph_data->add_subcommand(
      "diff-check", "Fail when a graph-data change disturbs phased rollouts in flight (schema 2.x)");
  diff->add_option("old", diff_args->old_dir, "Graph-data before the change")->required()->check(CLI::ExistingDirectory);
  diff->add_option("new", diff_args->new_dir, "Graph-data after the change")->required()->check(CLI::ExistingDirectory);
  diff->add_option("--at", diff_args->at, "When the change lands (RFC 3339; default now)")->check(InstantValidator());
  diff->add_flag("--force", diff_args->force, "Report but do not fail");
  diff->callback([diff_args, &exit_code] { exit_code = RunDiffCheck(*diff_args); });
}

struct PushArgs {
  std::string dir, to, username, password, ca_dir;
  bool force = false;
};

// The directory's files as a one-layer image, pushed; returns its pull spec by digest.
Result<std::string> PushGraphData(const PushArgs& a) {
  CINCINNATI_ASSIGN_OR_RETURN(registry::ImageReference ref, registry::ParseImageReference(a.to));
  if (ref.tag.empty()) return Status::InvalidArgument(fmt::format("--to '{}': a tag is required", a.to));
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<registry::LayerEntry> files,
                              GraphDataLayerEntries(a.dir, DefaultGraphDataAllowlist()));
  CINCINNATI_ASSIGN_OR_RETURN(registry::Layer layer, registry::MakeLayer(files));
  registry::RegistryClient client(ref.location, {a.username, a.password}, {.ca_path = a.ca_dir});
  CINCINNATI_ASSIGN_OR_RETURN(std::string digest, registry::PushImage(client, ref.tag, "amd64", {layer}));
  return ref.location.PullSpecPrefix() + "@" + digest;
}

void RegisterPush(CLI::App* graph_data, int& exit_code) {
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
    auto pushed = PushGraphData(a);
    if (!pushed.ok()) {
      std::cerr << "error: " << pushed.status().message() << '\n';
      exit_code = 1;
      return;
    }
    std::cout << *pushed << '\n';
  });
}

}  // namespace

void RegisterGraphDataCommands(CLI::App& app, int& exit_code) {
  CLI::App* graph_data = app.add_subcommand("graph-data", "Work with graph-data directories");
  graph_data->require_subcommand(1);
  RegisterCheck(graph_data, exit_code);
  RegisterDiffCheck(graph_data, exit_code);
  RegisterPush(graph_data, exit_code);
}

}  // namespace cincinnati::cli
