// The policy engine's graph page (`/`) and its data under `{prefix}/v1/ui/` (see
// policy_engine_service.h and ui/web_page.h).
#include <boost/json.hpp>

#include <chrono>
#include <set>

#include <fmt/format.h>

#include "core/json.h"
#include "core/metadata_keys.h"
#include "core/strings.h"
#include "graph-data/time_format.h"
#include "http_server/query.h"
#include "insight/builder_records.h"
#include "policy/default_chain.h"
#include "policy/params.h"
#include "policy/phased_rollout.h"
#include "policy_engine/svg_cache.h"
#include "service/http_names.h"
#include "service/responses.h"
#include "ui/graph_render.h"
#include "ui/web_page.h"

namespace cincinnati::server {
namespace {

// Channels and architectures named by the graph's releases.
std::string ChannelsJson(const Graph& graph) {
  std::set<std::string> arches;
  for (const Node& n : graph.nodes()) {
    auto arch = n.metadata.find(std::string(kArchKey));
    arches.insert(arch == n.metadata.end() ? "amd64" : arch->second);
  }
  return WriteJson(boost::json::object{{"channels", boost::json::value_from(policy::ChannelsOf(graph))},
                                       {"arches", boost::json::value_from(arches)}});
}

std::string Param(const Parameters& p, const char* name, const char* fallback) {
  auto it = p.find(name);
  return it == p.end() ? fallback : it->second;
}

// The channel's phased rollouts at `now`: how far each window is.
std::string RolloutsJson(const Graph& graph, const std::string& channel, int64_t now) {
  auto windows = policy::RolloutWindows(graph);
  boost::json::array rollouts;
  for (const policy::RolloutWindow& w : windows.ok() ? *windows : std::vector<policy::RolloutWindow>{}) {
    if (w.channel != channel) continue;
    rollouts.push_back(boost::json::object{{"from", w.from},
                                           {"to", w.to},
                                           {"share", w.Fraction(now)},
                                           {"begin", graphdata::FormatDateTime(w.begin)},
                                           {"completeAt", graphdata::FormatDateTime(w.begin + w.duration)}});
  }
  return WriteJsonFixed(boost::json::object{{"channel", channel},
                                            {"now", graphdata::FormatDateTime(now)},
                                            {"rollouts", std::move(rollouts)}},
                        4);  // the shares, as they have always been given
}

}  // namespace

namespace {

// Whether a request at the page's address is a browser's: no Accept, or one that takes
// HTML. A Cincinnati client pointed at the prefix (the CVO sends Accept:
// application/json) gets the reference's 404 instead of a page it cannot read.
bool WantsHtml(const std::string* accept) {
  if (accept == nullptr) return true;
  for (std::string_view range : Split(*accept, ',')) {
    range = TrimWhitespace(range.substr(0, range.find(';')));
    if (range == "text/html" || range == "text/*" || range == "*/*" || range == "*" || range == "application/xhtml+xml") {
      return true;
    }
  }
  return false;
}

}  // namespace

std::optional<Response> PolicyEngineService::ServeUi(const Request& request) {
  const std::string& prefix = options_.path_prefix;
  const bool page = request.path == "/" || (!prefix.empty() && (request.path == prefix || request.path == prefix + "/"));
  if (page && !WantsHtml(request.Header("Accept"))) return std::nullopt;
  if (!page && !request.path.starts_with(prefix + "/v1/ui/")) return std::nullopt;
  if (request.method != "GET" && request.method != "HEAD") return Response::Empty(405);
  if (page) return Response::Text(200, ui::GraphPage(prefix), "text/html; charset=utf-8");

  auto params = ParseQuery(request.query);
  if (!params.ok()) return ErrorResponse(ErrorDocument::FromStatus(params.status()), response_errors_);
  return ServeUiData(request.path.substr(prefix.size() + 7), *params);
}

std::optional<Response> PolicyEngineService::ServeUiData(const std::string& what, const Parameters& params) {
  std::shared_ptr<const Graph> full = answers_.insight_graph();
  std::shared_ptr<ViewCache> views = answers_.views();
  if (!full || !views) {
    return ErrorResponse(ErrorDocument::Of("failed_upstream_fetch", "no graph yet (the page needs a graph builder's graph)"),
                         response_errors_);
  }
  if (what == "channels") return Response::Text(200, ChannelsJson(*full), "application/json");
  if (what == "adoption") {
    // Clusters are seen only where reports are taken (the sightings are theirs).
    return Response::Text(200, options_.reports ? adoption_.Json() : R"({"samples":[],"off":"reports are off"})",
                          "application/json");
  }

  const std::string channel = Param(params, "channel", "");
  const std::string arch = Param(params, "arch", "amd64");
  if (Status st = policy::ValidateChannel(channel); !st.ok()) return ErrorResponse(ErrorDocument::FromStatus(st), response_errors_);
  if (Status st = policy::ValidateArch(arch); !st.ok()) return ErrorResponse(ErrorDocument::FromStatus(st), response_errors_);

  if (what == "rollouts") return Response::Text(200, RolloutsJson(views->graph(), channel, Now()), "application/json");
  if (what != "graph.svg") return Response::Empty(404);
  return ServeSvg(params, full, *views);
}

Response PolicyEngineService::ServeSvg(const Parameters& params, const std::shared_ptr<const Graph>& full,
                                       const ViewCache& views) {
  const std::string channel = Param(params, "channel", "");
  const std::string arch = Param(params, "arch", "amd64");
  const bool blocked = Param(params, "blocked", "") == "1";
  const std::string key = fmt::format("{}\n{}\n{}", channel, arch, blocked);
  {
    std::lock_guard<std::mutex> lock(svgs_->mu);
    if (svgs_->graph != full) {
      svgs_->graph = full;
      svgs_->svgs.clear();
    }
    if (auto it = svgs_->svgs.find(key); it != svgs_->svgs.end()) {
      Response r = Response::Text(200, *it->second, "image/svg+xml");
      return r;
    }
  }
  TransformContext context;
  context.parameters = {{"channel", channel}, {"arch", arch}};
  auto view = RunChainOn(chain_, views.graph(), context);
  if (!view.ok()) return ErrorResponse(ErrorDocument::FromStatus(view.status()), response_errors_);
  ui::DotOptions dot;
  dot.title = fmt::format("{} ({})", channel, arch);
  if (blocked) {
    const insight::BuilderRecords records(*full, arch);
    for (const insight::EdgeRemoval& r : records.removals()) {
      dot.blocked.push_back(ui::BlockedEdgeMark{r.from, r.to, r.Describe()});
    }
  }
  auto svg = ui::RenderDot(ui::ViewDot(*view, dot), "svg");
  if (!svg.ok()) return InternalError(svg.status());
  auto shared = std::make_shared<const std::string>(std::move(svg).value());
  {
    std::lock_guard<std::mutex> lock(svgs_->mu);
    if (svgs_->graph == full) {
      if (svgs_->svgs.size() >= SvgCache::kMaxEntries) svgs_->svgs.clear();
      svgs_->svgs.emplace(key, shared);
    }
  }
  return Response::Text(200, *shared, "image/svg+xml");
}

}  // namespace cincinnati::server
