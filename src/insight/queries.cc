#include "insight/queries.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <set>
#include <typeinfo>

#include <fmt/format.h>

#include "core/guard.h"
#include "core/metadata_keys.h"
#include "core/semver.h"
#include "core/strings.h"
#include "policy/arch_filter.h"
#include "policy/channel_filter.h"
#include "policy/default_chain.h"
#include "policy/params.h"

namespace cincinnati::insight {
namespace {

// A release version as a parameter: SemVer, as clusters send it.
Result<std::string> VersionParam(const Parameters& params, std::string_view name) {
  CINCINNATI_ASSIGN_OR_RETURN(std::string value, policy::RequiredParam(params, name));
  if (!Version::Parse(value).ok()) {
    return Status::InvalidParams(fmt::format("{} '{}' is not a SemVer version", name, value));
  }
  return value;
}

std::vector<std::string> List(std::string_view value) {
  std::vector<std::string> out;
  for (std::string_view item : Split(value, ',')) {
    item = TrimWhitespace(item);
    if (!item.empty()) out.emplace_back(item);
  }
  return out;
}

Result<std::string> ArchParam(const Parameters& params) {
  auto it = params.find("arch");
  std::string arch = it == params.end() ? "amd64" : it->second;
  CINCINNATI_RETURN_IF_ERROR(policy::ValidateArch(arch));
  return arch;
}

}  // namespace

Result<PathQuery> ParsePathQuery(const Parameters& params) {
  PathQuery q;
  CINCINNATI_ASSIGN_OR_RETURN(std::string channels, policy::RequiredParam(params, "channel"));
  q.channels = List(channels);
  if (q.channels.empty()) return Status::InvalidParams("channel: give at least one channel");
  for (const std::string& c : q.channels) CINCINNATI_RETURN_IF_ERROR(policy::ValidateChannel(c));
  CINCINNATI_ASSIGN_OR_RETURN(q.from, VersionParam(params, "from"));
  CINCINNATI_ASSIGN_OR_RETURN(q.to, VersionParam(params, "to"));
  CINCINNATI_ASSIGN_OR_RETURN(q.arch, ArchParam(params));
  if (auto id = params.find("id"); id != params.end()) q.id = id->second;
  if (auto accept = params.find("accept"); accept != params.end()) q.options.accepted_risks = List(accept->second);
  if (auto k = params.find("k"); k != params.end()) {
    size_t value = 0;
    auto [end, error] = std::from_chars(k->second.data(), k->second.data() + k->second.size(), value);
    if (k->second.empty() || error != std::errc() || end != k->second.data() + k->second.size() || value == 0 ||
        value > kMaxAlternatives) {
      return Status::InvalidParams(fmt::format("k '{}' must be a number from 1 to {}", k->second, kMaxAlternatives));
    }
    q.options.alternatives = value;
  }
  static const std::set<std::string, std::less<>> kOwn = {"channel", "from", "to", "arch", "id", "accept", "k", "version"};
  for (const auto& [name, value] : params) {
    if (!kOwn.count(name)) q.other.emplace(name, value);
  }
  return q;
}

Result<ExplainRequest> ParseExplainQuery(const Parameters& params) {
  ExplainRequest r;
  CINCINNATI_ASSIGN_OR_RETURN(std::string channel, policy::RequiredParam(params, "channel"));
  CINCINNATI_RETURN_IF_ERROR(policy::ValidateChannel(channel));
  CINCINNATI_ASSIGN_OR_RETURN(r.version, VersionParam(params, "version"));
  if (params.count("to")) {
    CINCINNATI_ASSIGN_OR_RETURN(std::string to, VersionParam(params, "to"));
    r.to = std::move(to);
  }
  CINCINNATI_ASSIGN_OR_RETURN(std::string arch, ArchParam(params));
  r.parameters = params;
  r.parameters.erase("to");
  r.parameters["arch"] = arch;
  return r;
}

namespace {

// Whether `filter` (a channel or arch filter, which by its contract keeps a release
// whose list under its one key names the parameter) reads `key`: it keeps a release
// that has that key alone, naming `value`.
bool FilterReadsKey(const GraphTransform& filter, const std::string& key, const std::string& param,
                    const std::string& value) {
  Graph probe;
  if (!probe.AddNode(Node::Concrete("0.0.0", "", Metadata{{key, value}})).ok()) return false;
  TransformContext context;
  context.parameters[param] = value;
  auto kept = Guarded(filter.name(), [&] { return filter.ApplyTo(probe, context); });
  return kept.ok() && kept->node_count() == 1;
}

// The graph a query's views are made from. The chain's leading channel-filter and
// arch-filter keep releases one by one: the concrete ones whose channel list names the
// channel, then those whose arch list names the arch. Their answer on the releases
// that name one of the query's channels (and its arch) is their answer on the whole
// graph (Retain keeps the order of releases, edges and conditional edges). So the
// whole graph is walked once, not once per channel, and the per-channel steps copy the
// releases of one arch, not of all: over 10,000 releases and their conditional edges,
// those walks are most of a path's time. nullopt (the views come from the builder graph
// itself): a chain that does not open with a channel filter on the default key.
std::optional<Graph> NarrowedForChannels(const TransformChain& chain, const Graph& builder_graph,
                                         const PathQuery& query) {
  const std::string channel_key = PrefixedKey(kDefaultKeyPrefix, kChannelsSuffix);
  if (query.channels.empty() || chain.empty() || typeid(*chain[0]) != typeid(policy::ChannelFilter) ||
      !FilterReadsKey(*chain[0], channel_key, "channel", query.channels.front())) {
    return std::nullopt;
  }
  // The arch too, unless the arch filter keeps releases without an arch (a served view).
  std::optional<std::string> arch_key = std::string(kArchKey);
  if (chain.size() < 2 || typeid(*chain[1]) != typeid(policy::ArchFilter) || builder_graph.is_served_view() ||
      !FilterReadsKey(*chain[1], *arch_key, "arch", query.arch)) {
    arch_key.reset();
  }
  auto lists = [](const Metadata& metadata, const std::string& key, const std::vector<std::string>& items) {
    auto it = metadata.find(key);
    return it != metadata.end() && std::any_of(items.begin(), items.end(), [&](const std::string& item) {
             return ListContains(it->second, item);
           });
  };
  const std::vector<std::string> arch{query.arch};
  return builder_graph.Retain([&](NodeIndex i) {
    const Node& node = builder_graph.node(i);
    return node.concrete && (!arch_key || lists(node.metadata, *arch_key, arch)) &&
           lists(node.metadata, channel_key, query.channels);
  });
}

}  // namespace

Result<std::vector<ChannelView>> PathViews(const TransformChain& chain, const Graph& builder_graph,
                                           const PathQuery& query, const EntitlementsFor& entitlements) {
  std::optional<Graph> narrowed = NarrowedForChannels(chain, builder_graph, query);
  const Graph& source = narrowed ? *narrowed : builder_graph;
  std::vector<ChannelView> views;
  for (const std::string& channel : query.channels) {
    TransformContext context;
    context.parameters = query.other;
    context.parameters["channel"] = channel;
    context.parameters["arch"] = query.arch;
    context.parameters["version"] = query.from;  // the view the cluster at `from` is served
    if (!query.id.empty()) context.parameters["id"] = query.id;
    if (entitlements) context.entitlements = entitlements(channel);
    auto view = RunChainOn(chain, source, context);
    if (!view.ok()) return view.status();
    views.push_back(ChannelView{channel, std::make_shared<const Graph>(std::move(view).value())});
  }
  return views;
}

Result<PathAnswer> PlanPaths(const TransformChain& chain, const Graph& builder_graph, const PathQuery& query,
                             const EntitlementsFor& entitlements) {
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<ChannelView> views, PathViews(chain, builder_graph, query, entitlements));
  // A view with no release: a channel or arch the graph may not have, said as every
  // command says it (checked only then: a scan of every release's metadata).
  if (std::any_of(views.begin(), views.end(), [](const ChannelView& v) { return v.view->node_count() == 0; })) {
    CINCINNATI_RETURN_IF_ERROR(policy::CheckChannelsAndArch(builder_graph, query.channels, query.arch));
  }
  // The builder's records are read only if no path is found but through removed edges.
  BuilderRecords records(builder_graph, query.arch);
  PathFinder finder(views, records);
  return finder.Find(query.from, query.to, query.options);
}

}  // namespace cincinnati::insight
