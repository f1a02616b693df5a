#include "insight/queries.h"

#include <charconv>
#include <set>

#include <fmt/format.h>

#include "core/semver.h"
#include "core/strings.h"
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

Result<PathAnswer> PlanPaths(const TransformChain& chain, const Graph& builder_graph, const PathQuery& query,
                             const EntitlementsFor& entitlements) {
  std::vector<ChannelView> views;
  for (const std::string& channel : query.channels) {
    TransformContext context;
    context.parameters = query.other;
    context.parameters["channel"] = channel;
    context.parameters["arch"] = query.arch;
    context.parameters["version"] = query.from;  // the view the cluster at `from` is served
    if (!query.id.empty()) context.parameters["id"] = query.id;
    if (entitlements) context.entitlements = entitlements(channel);
    auto view = RunChainOn(chain, builder_graph, context);
    if (!view.ok()) return view.status();
    views.push_back(ChannelView{channel, std::make_shared<const Graph>(std::move(view).value())});
  }
  BuilderRecords records(builder_graph, query.arch);
  return FindUpdatePaths(views, records.removals(), query.from, query.to, query.options);
}

}  // namespace cincinnati::insight
