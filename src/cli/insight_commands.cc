// `cincinnati path` and `cincinnati explain`: update paths and explanations (src/insight),
// asked of a running service (--url) or computed from local releases and graph-data with
// the policy engine's default chain.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "builder/pipeline.h"
#include "core/error_document.h"
#include "cli/commands.h"
#include "cli/did_you_mean.h"
#include "graph-data/time_format.h"
#include "http/client.h"
#include "insight/queries.h"
#include "policy/default_chain.h"
#include "http_server/query.h"
#include "env/clock.h"
#include "env/file_system.h"
#include "ui/graph_render.h"

namespace cincinnati::cli {
namespace {

struct InsightArgs {
  bool path = true;
  std::string url, releases, graph_data, at;
  std::vector<std::string> channels, accept, entitled, channel_targets;
  std::string from, to, arch = "amd64", id;
  size_t k = 1;
  bool json = false;
};

Parameters QueryOf(const InsightArgs& a) {
  Parameters p;
  std::string channels;
  for (const std::string& c : a.channels) channels += (channels.empty() ? "" : ",") + c;
  p["channel"] = channels;
  p["arch"] = a.arch;
  if (!a.id.empty()) p["id"] = a.id;
  if (a.path) {
    p["from"] = a.from;
    p["to"] = a.to;
    if (a.k != 1) p["k"] = std::to_string(a.k);
    std::string accept;
    for (const std::string& r : a.accept) accept += (accept.empty() ? "" : ",") + r;
    if (!accept.empty()) p["accept"] = accept;
  } else {
    p["version"] = a.from;
    if (!a.to.empty()) p["to"] = a.to;
  }
  return p;
}

// Exit codes: 0 answered (a path found, something to explain), 1 otherwise.
int Remote(const InsightArgs& a) {
  std::string url = a.url;
  while (!url.empty() && url.back() == '/') url.pop_back();
  url += (a.path ? "/v1/path?" : "/v1/explain?") + http_server::EncodeQuery(QueryOf(a));
  http::GetOptions options;
  options.headers = {a.json ? "Accept: application/json" : "Accept: text/plain"};
  http::Result r = http::Get(url, options);
  if (!r.error.empty()) {
    std::cerr << "error: " << url << ": " << r.error << '\n';
    return 1;
  }
  if (!r.ok()) {
    // The service's own words when it sent an error document (an unknown channel, say),
    // as the same question asked locally says them.
    if (auto doc = ErrorDocument::Parse(r.body); doc.ok() && r.status < 500) {
      std::cerr << "error: " << doc->Detail() << '\n';
      return 1;
    }
    std::cerr << fmt::format("error: {} answered {}: {}\n", url, r.status, r.body);
    if (r.status == 404) {
      std::cerr << "hint: give the base URL of serve or a policy engine with its path prefix, e.g. "
                   "http://HOST:8081/api/upgrades_info (a graph builder has no such route)\n";
    }
    return 1;
  }
  std::cout << r.body << (a.json ? "\n" : "");
  if (!a.path) {  // nothing to explain: a failure, as a path that is not there
    const bool stop = a.json ? r.body.find("\"stop\":") != std::string::npos
                             : r.body.starts_with("no releases in channel") || r.body.find(" is not a release of channel ") != std::string::npos;
    return stop ? 1 : 0;
  }
  const bool none = a.json ? r.body.find("\"found\":false") != std::string::npos : r.body.starts_with("no path");
  return none ? 1 : 0;
}

TransformChain LocalChain(const InsightArgs& a, int64_t now) {
  return policy::DefaultChain(std::set<std::string>(a.channel_targets.begin(), a.channel_targets.end()),
                              env::ManualClock::AtUnixSeconds(now));
}

Result<int> Local(const InsightArgs& a) {
  CINCINNATI_ASSIGN_OR_RETURN(const int64_t now, InstantOrNow(a.at));
  CINCINNATI_ASSIGN_OR_RETURN(Graph graph, BuildLocalInputs(a.releases, a.graph_data));
  TransformChain chain = LocalChain(a, now);
  ClusterEntitlements entitlements;
  entitlements.hotfixes = a.entitled;
  std::sort(entitlements.hotfixes.begin(), entitlements.hotfixes.end());
  if (a.path) {
    CINCINNATI_ASSIGN_OR_RETURN(insight::PathQuery query, insight::ParsePathQuery(QueryOf(a)));
    CINCINNATI_ASSIGN_OR_RETURN(insight::PathAnswer answer,
                                insight::PlanPaths(chain, graph, query, [&](std::string_view) { return entitlements; }));
    std::cout << (a.json ? insight::PathJson(answer) + "\n" : insight::PathText(answer));
    return answer.paths.empty() ? 1 : 0;
  }
  CINCINNATI_ASSIGN_OR_RETURN(insight::ExplainRequest request, insight::ParseExplainQuery(QueryOf(a)));
  request.entitlements = entitlements;
  CINCINNATI_ASSIGN_OR_RETURN(insight::Explanation e, insight::Explain(chain, graph, request));
  std::cout << (a.json ? insight::ExplanationJson(e) + "\n" : insight::ExplanationText(e));
  return e.stop.empty() ? 0 : 1;
}

struct RenderArgs {
  InsightArgs view;
  std::string format, output;  // format "": the output file's extension, else svg
  bool blocked = false;
};

// -o beta.png without --format draws a PNG, as the name says; a name whose extension is
// none of the three (x.jpg) is refused rather than written as SVG; no extension is SVG.
Result<std::string> FormatOf(const RenderArgs& r) {
  if (!r.format.empty()) return r.format;
  for (const char* f : {"png", "svg", "dot"}) {
    if (r.output.ends_with(std::string(".") + f)) return std::string(f);
  }
  const std::string name = std::filesystem::path(r.output).filename().string();
  if (name.find('.') != std::string::npos && r.output != "-") {
    return Status::InvalidArgument(fmt::format("-o {}: cannot draw that format; name the file .svg, .png or .dot, "
                                               "or give --format",
                                               r.output));
  }
  return std::string("svg");
}

// `graph render`: the channel's view (of a cluster at --from, when given) as a picture.
Status Render(const RenderArgs& r) {
  const InsightArgs& a = r.view;
  CINCINNATI_ASSIGN_OR_RETURN(const std::string format, FormatOf(r));
  CINCINNATI_ASSIGN_OR_RETURN(const int64_t now, InstantOrNow(a.at));
  CINCINNATI_ASSIGN_OR_RETURN(Graph graph, BuildLocalInputs(a.releases, a.graph_data));
  TransformChain chain = LocalChain(a, now);
  TransformContext context;
  context.parameters = {{"channel", a.channels.at(0)}, {"arch", a.arch}};
  if (!a.from.empty()) context.parameters["version"] = a.from;
  if (!a.id.empty()) context.parameters["id"] = a.id;
  context.entitlements.hotfixes = a.entitled;
  CINCINNATI_ASSIGN_OR_RETURN(Graph view, RunChainOn(chain, graph, context));
  if (std::none_of(view.nodes().begin(), view.nodes().end(), [](const Node& n) { return n.concrete; })) {
    CINCINNATI_RETURN_IF_ERROR(policy::CheckChannelsAndArch(graph, {a.channels.at(0)}, a.arch));
    return Status::NotFound(fmt::format("no releases in channel {} for {}", a.channels[0], a.arch));
  }
  ui::DotOptions dot;
  dot.title = fmt::format("{} ({}){}", a.channels[0], a.arch, a.from.empty() ? "" : ", from " + a.from);
  if (!a.from.empty()) dot.highlight.push_back(a.from);
  if (!a.from.empty() && !a.to.empty()) {
    InsightArgs path = a;
    path.path = true;
    CINCINNATI_ASSIGN_OR_RETURN(insight::PathQuery query, insight::ParsePathQuery(QueryOf(path)));
    CINCINNATI_ASSIGN_OR_RETURN(insight::PathAnswer answer,
                                insight::PlanPaths(chain, graph, query, [&](std::string_view) { return context.entitlements; }));
    if (answer.paths.empty()) return Status::NotFound("--to: " + answer.message);
    for (const auto& hop : answer.paths[0].hops) {
      if (dot.path.empty()) dot.path.push_back(hop.from);
      dot.path.push_back(hop.to);
    }
  }
  if (r.blocked) {
    const insight::BuilderRecords records(graph, a.arch);
    for (const insight::EdgeRemoval& e : records.removals()) dot.blocked.push_back({e.from, e.to, e.Describe()});
  }
  CINCINNATI_ASSIGN_OR_RETURN(std::string picture, ui::RenderDot(ui::ViewDot(view, dot), format));
  if (r.output.empty() || r.output == "-") {
    std::cout << picture;
    return Status::OK();
  }
  return env::WriteFileDurably(r.output, picture, env::DefaultFileSystem(), env::kUserFileMode).WithContext(r.output);
}

void AddCommon(CLI::App* cmd, InsightArgs& a) {
  cmd->add_option("--url", a.url,
                  "Ask this running service (serve or policy engine), e.g. http://127.0.0.1:8081/api/upgrades_info");
  cmd->add_option("--releases", a.releases, "Compute locally: graph JSON file or directory of release documents");
  cmd->add_option("--graph-data", a.graph_data, "Compute locally: graph-data directory");
  cmd->add_option("--arch", a.arch, "Architecture")->capture_default_str();
  cmd->add_option("--id", a.id, "Cluster id (UUID): its phased-rollout position and hotfixes");
  cmd->add_option("--entitled", a.entitled,
                  "Compute locally: hotfix names this cluster may see (a service asks its cluster directory)")
      ->delimiter(',');
  cmd->add_option("--channel-target", a.channel_targets,
                  "Compute locally: channels served as channel-target views (\"*\": all)")
      ->delimiter(',');
  cmd->add_option("--at", a.at, "Compute locally: the instant to look at (RFC 3339; default now)")->check(InstantValidator());
  cmd->add_flag("--json", a.json, "Print JSON instead of a table");
}

void Run(const InsightArgs& a, int& exit_code) {
  if (a.url.empty() == (a.releases.empty() || a.graph_data.empty())) {
    std::cerr << "error: give --url, or --releases and --graph-data\n";
    exit_code = 1;
    return;
  }
  if (!a.url.empty()) {
    exit_code = Remote(a);
    return;
  }
  auto code = Local(a);
  if (!code.ok()) {
    std::cerr << "error: " << code.status().message() << '\n';
    exit_code = 1;
    return;
  }
  exit_code = *code;
}

}  // namespace

void AddGraphRender(CLI::App* graph, int& exit_code) {
  auto r = std::make_shared<RenderArgs>();
  r->view.channels.resize(1);
  CLI::App* cmd = graph->add_subcommand(
      "render", "Draw a channel's view (Graphviz): releases in version order, recommended and conditional edges");
  cmd->add_option("--releases", r->view.releases, "Graph JSON file or directory of release documents")->required();
  cmd->add_option("--graph-data", r->view.graph_data, "Graph-data directory")->required();
  cmd->add_option("--channel", r->view.channels[0], "Channel")->required();
  cmd->add_option("--arch", r->view.arch, "Architecture")->capture_default_str();
  cmd->add_option("--from", r->view.from, "Draw the view of a cluster at this release, and mark it");
  cmd->add_option("--to", r->view.to, "With --from: draw the path to this release in bold")->needs("--from");
  cmd->add_option("--id", r->view.id, "Cluster id (UUID) for phased rollouts");
  cmd->add_option("--entitled", r->view.entitled, "Hotfix names the cluster may see")->delimiter(',');
  cmd->add_option("--channel-target", r->view.channel_targets, "Channels served as channel-target views")->delimiter(',');
  cmd->add_option("--at", r->view.at, "The instant to draw (RFC 3339; default now)")->check(InstantValidator());
  cmd->add_flag("--blocked", r->blocked, "Also draw the edges blocked-edges removed (dotted red)");
  cmd->add_option("--format", r->format, "svg, png or dot (default: -o's extension, else svg)")
      ->check(CLI::IsMember({"svg", "png", "dot"}));
  cmd->add_option("-o,--output", r->output, "File to write (default: standard output)");
  cmd->callback([r, cmd, &exit_code] {
    if (Result<std::string> format = FormatOf(*r); !format.ok()) {
      exit_code = ReportUsage(*cmd, format.status());
      return;
    }
    Status st = Render(*r);
    if (!st.ok()) {
      std::cerr << "error: " << st.message() << '\n';
      exit_code = 1;
    }
  });
}

void RegisterInsightCommands(CLI::App& app, int& exit_code) {
  auto path = std::make_shared<InsightArgs>();
  CLI::App* p = app.add_subcommand(
      "path", "Plan the updates from one release to another as a cluster is served them (exit 1: no path)");
  AddCommon(p, *path);
  p->add_option("--channel", path->channels, "Channel (repeat, or commas, to let the path cross channels)")
      ->required()
      ->delimiter(',');
  p->add_option("--from", path->from, "The release the cluster runs")->required();
  p->add_option("--to", path->to, "The release to reach")->required();
  p->add_option("--accept", path->accept, "Risk names to accept (\"*\": every risk)")->delimiter(',');
  p->add_option("-k,--alternatives", path->k, "How many paths to list (shortest first)")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, insight::kMaxAlternatives));
  p->callback([path, &exit_code] { Run(*path, exit_code); });

  auto explain = std::make_shared<InsightArgs>();
  explain->path = false;
  CLI::App* e = app.add_subcommand(
      "explain",
      "Say why a cluster is (not) offered an update: the step, file, risk or rollout that decides (exit 1: no "
      "such release in the channel)");
  AddCommon(e, *explain);
  explain->channels.resize(1);
  e->add_option("--channel", explain->channels[0], "Channel")->required();
  e->add_option("--version,--from", explain->from, "The release the cluster runs")->required();
  e->add_option("--to", explain->to, "One target (default: every newer release of the channel)");
  e->callback([explain, &exit_code] { Run(*explain, exit_code); });
}

}  // namespace cincinnati::cli
