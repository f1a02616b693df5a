#include "policy/arch_filter.h"

#include <unordered_map>

#include <fmt/format.h>

#include "core/semver.h"
#include "core/strings.h"
#include "policy/params.h"

namespace cincinnati::policy {
namespace {

// The version with every build identifier equal to `arch` dropped.
Result<std::string> StripArch(const std::string& version, std::string_view arch) {
  auto v = Version::Parse(version);
  if (!v.ok()) return Status::ArchVersion(version);
  std::vector<Identifier> build;
  for (const Identifier& id : v->build()) {
    if (id.numeric || id.text != arch) build.push_back(id);
  }
  return v->WithBuild(std::move(build)).ToString();
}

}  // namespace

Result<Graph> ArchFilter::ApplyTo(const Graph& graph, TransformContext& context) const {
  std::string arch = default_arch_;
  if (auto it = context.parameters.find(kArchParam); it != context.parameters.end()) arch = it->second;
  CINCINNATI_RETURN_IF_ERROR(ValidateArch(arch));

  Graph out = graph.Retain([&](NodeIndex i) {
    const Node& n = graph.node(i);
    if (!n.concrete) return false;
    auto it = n.metadata.find(key_);
    if (it == n.metadata.end()) return graph.is_served_view();  // filtered upstream already
    return ListContains(it->second, arch);
  });
  std::unordered_map<std::string, std::string> renamed;
  std::vector<std::string> versions;
  versions.reserve(out.node_count());
  for (NodeIndex i = 0; i < out.node_count(); ++i) {
    out.mutable_metadata(i).erase(key_);
    CINCINNATI_ASSIGN_OR_RETURN(std::string stripped, StripArch(out.node(i).version, arch));
    renamed.emplace(out.node(i).version, stripped);
    versions.push_back(std::move(stripped));
  }
  if (Status st = out.RenameAll(std::move(versions)); !st.ok()) return Status::ArchVersion(st.message());
  for (ConditionalEdge& group : out.mutable_conditional_edges()) {
    for (ConditionalEdgeRef& ref : group.edges) {
      ref.from = renamed.at(ref.from);
      ref.to = renamed.at(ref.to);
    }
  }
  return out;
}

StepReason ArchFilter::ExplainLoss(const StepLoss& loss) const {
  if (loss.to) return GraphTransform::ExplainLoss(loss);  // it removes releases, never an edge alone
  auto arch = loss.context.parameters.find(kArchParam);
  return {"not_for_arch", fmt::format("{} is not built for arch {}", loss.from_version,
                                      arch == loss.context.parameters.end() ? default_arch_ : arch->second)};
}

PluginStep ArchFilterFromSettings(const PluginSettings& r) {
  CINCINNATI_RETURN_IF_ERROR(r.CheckKnown({"key_prefix", "key_suffix", "default_arch", "default_arch_threshold_version"}));
  return std::unique_ptr<GraphTransform>(std::make_unique<ArchFilter>(
      r.Get("key_prefix", std::string(kDefaultKeyPrefix)), r.Get("key_suffix", "release.arch"),
      r.Get("default_arch", "amd64")));
}

}  // namespace cincinnati::policy
