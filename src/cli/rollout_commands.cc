// `cincinnati rollout preview`: what one cluster sees in a channel, and when each
// phased edge appears for it, computed with the service's default chain (hotfix
// entitlements and channel targets included) up to its phased-rollout step.
#include <algorithm>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "builder/pipeline.h"
#include "cli/commands.h"
#include "env/clock.h"
#include "graph-data/time_format.h"
#include "policy/default_chain.h"
#include "policy/params.h"

namespace cincinnati::cli {
namespace {

struct PreviewArgs {
  std::string releases, graph_data, channel, id, at, version, arch = "amd64";
  std::vector<std::string> entitled, channel_targets;
};

std::string Human(int64_t seconds) {
  if (seconds < 3600) return fmt::format("{}m", seconds / 60);
  if (seconds < 86400) return fmt::format("{}h{:02}m", seconds / 3600, seconds / 60 % 60);
  return fmt::format("{}d{:02}h", seconds / 86400, seconds / 3600 % 24);
}

Status RunPreview(const PreviewArgs& a) {
  CINCINNATI_ASSIGN_OR_RETURN(const int64_t now, InstantOrNow(a.at));
  CINCINNATI_ASSIGN_OR_RETURN(Graph graph, BuildLocalInputs(a.releases, a.graph_data));
  CINCINNATI_RETURN_IF_ERROR(policy::CheckChannelsAndArch(graph, {a.channel}, a.arch));
  // The service's chain up to phased-rollout, whose timings are listed instead.
  const TransformChain chain = policy::DefaultChain(
      std::set<std::string>(a.channel_targets.begin(), a.channel_targets.end()), env::ManualClock::AtUnixSeconds(now),
      policy::Phases::kLeaveOut);
  TransformContext context;
  context.parameters = {{"channel", a.channel}, {"arch", a.arch}};
  if (!a.id.empty()) context.parameters["id"] = a.id;
  if (!a.version.empty()) context.parameters["version"] = a.version;
  context.entitlements.hotfixes = a.entitled;
  std::sort(context.entitlements.hotfixes.begin(), context.entitlements.hotfixes.end());
  CINCINNATI_ASSIGN_OR_RETURN(Graph view, RunChainOn(chain, graph, context));
  bool valid = policy::IsValidClusterId(a.id);
  std::cout << fmt::format("channel {}, arch {}, cluster {}{}, at {}\n", a.channel, a.arch, a.id.empty() ? "(none)" : a.id,
                           valid || a.id.empty() ? "" : " (not a UUID: treated as no id)", graphdata::FormatDateTime(now));

  CINCINNATI_ASSIGN_OR_RETURN(std::vector<policy::EdgeTiming> timings, policy::EdgeTimings(view, a.channel, a.id));
  for (const policy::EdgeTiming& t : timings) {
    std::string when = t.appears == INT64_MIN ? "always" : graphdata::FormatDateTime(t.appears);
    std::string state = t.appears <= now ? "visible" : "in " + Human(t.appears - now);
    std::string phased = t.window > 0 ? fmt::format("  (window {}, this cluster at {:.1f}%)", Human(t.window), t.position * 100)
                                      : "";
    std::cout << fmt::format("{:>12} -> {:<12} {:<21} {}{}\n", t.from, t.to, when, state, phased);
  }
  return Status::OK();
}

}  // namespace

void RegisterRolloutCommands(CLI::App& app, int& exit_code) {
  CLI::App* rollout = app.add_subcommand("rollout", "Inspect phased rollouts (graph-data 2.x)");
  rollout->require_subcommand(1);
  auto args = std::make_shared<PreviewArgs>();
  CLI::App* preview = rollout->add_subcommand(
      "preview", "Print the edges one cluster sees in a channel and when each phased edge appears for it");
  preview->add_option("--releases", args->releases, "Graph JSON file or directory of release documents")->required();
  preview->add_option("--graph-data", args->graph_data, "Graph-data directory")->required();
  preview->add_option("--channel", args->channel, "Channel")->required();
  preview->add_option("--id", args->id, "Cluster id (a UUID)");
  preview->add_option("--at", args->at, "Time to look at (RFC 3339; default now)")->check(InstantValidator());
  preview->add_option("--arch", args->arch, "Architecture")->capture_default_str();
  preview->add_option("--entitled", args->entitled, "Hotfix names the cluster may see (with --id)")->delimiter(',');
  preview->add_option("--version", args->version, "The release the cluster runs (for --channel-target views)");
  preview->add_option("--channel-target", args->channel_targets, "Channels served as channel-target views")
      ->delimiter(',');
  preview->callback([args, &exit_code] {
    Status st = RunPreview(*args);
    if (!st.ok()) {
      std::cerr << "error: " << st.message() << '\n';
      exit_code = 1;
    }
  });
}

}  // namespace cincinnati::cli
