#include "ui/graph_render.h"

#include <graphviz/gvc.h>

#include <algorithm>
#include <map>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "core/semver.h"
#include "core/strings.h"

namespace cincinnati::ui {
namespace {

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::vector<NodeIndex> VersionOrder(const Graph& view) {
  std::vector<std::pair<std::optional<Version>, NodeIndex>> keyed;
  for (NodeIndex i = 0; i < view.node_count(); ++i) {
    auto v = Version::Parse(view.node(i).version);
    keyed.emplace_back(v.ok() ? std::optional<Version>(*v) : std::nullopt, i);
  }
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    if (a.first.has_value() != b.first.has_value()) return !a.first.has_value();
    if (a.first && !(*a.first == *b.first)) return *a.first < *b.first;
    return view.node(a.second).version < view.node(b.second).version;
  });
  std::vector<NodeIndex> out;
  for (const auto& k : keyed) out.push_back(k.second);
  return out;
}

// dot's layered layout grows steeply with edges that span many ranks, as release
// graphs' do: measured 0.76 s for 425 edges, 12.9 s for 925 and over a minute for a
// 1,925-edge channel. Bigger views are pinned to a version grid instead (below).
constexpr size_t kLayeredEdgeLimit = 300;

// The version grid: one row per major.minor (wrapped every kPerRow releases), releases
// left to right in version order; edges within a row arc above it, edges to a later
// row run down to it. Graphviz draws it as given (its nop2 engine, neato -n2).
class VersionGrid {
 public:
  static constexpr int kPerRow = 25, kDx = 90, kRowHeight = 260, kHalfHeight = 18;

  explicit VersionGrid(const Graph& view, const std::vector<NodeIndex>& order) {
    std::string previous_group;
    int row = -1, column = 0;
    for (NodeIndex i : order) {
      const std::string& v = view.node(i).version;
      auto parsed = Version::Parse(v);
      std::string group = parsed.ok() ? fmt::format("{}.{}", parsed->major(), parsed->minor()) : "";
      if (row < 0 || group != previous_group || column == kPerRow) {
        ++row;
        column = 0;
      }
      previous_group = group;
      at_[v] = {column++ * kDx, -row * kRowHeight};
    }
  }
  std::string NodePos(const std::string& v) const {
    auto [x, y] = at_.at(v);
    return fmt::format(", pos=\"{},{}!\"", x, y);
  }
  // A cubic B-spline with an arrowhead at `to`'s top ("e,x,y p0 p1 p2 p3").
  std::string EdgePos(const std::string& from, const std::string& to) const {
    auto [x1, y1] = at_.at(from);
    auto [x2, y2] = at_.at(to);
    const int top = y2 + kHalfHeight;
    if (y1 == y2) {
      const int h = std::min(kRowHeight / 2, 12 + std::abs(x2 - x1) / 4);
      return fmt::format(", pos=\"e,{},{} {},{} {},{} {},{} {},{}\"", x2, top, x1, y1 + kHalfHeight, x1,
                         y1 + kHalfHeight + h, x2, top + h, x2, top + 6);
    }
    const int mid = (y1 - kHalfHeight + top) / 2;
    return fmt::format(", pos=\"e,{},{} {},{} {},{} {},{} {},{}\"", x2, top, x1, y1 - kHalfHeight, x1, mid, x2, mid, x2,
                       top + 6);
  }

 private:
  std::map<std::string, std::pair<int, int>> at_;
};

// The risk a brake puts on an edge is named AutomaticallyBlocked_<from>_to_<to> (the
// reports' brakes): its edges are drawn apart from people's conditional edges.
constexpr std::string_view kBrakeRiskPrefix = "AutomaticallyBlocked_";

struct EdgeMark {
  std::string from, to, kind, style, tooltip;
  std::string label = {};  // written on the edge in the layered layout (the grid has no room)
};

std::string EdgeLine(const EdgeMark& e, bool on_path, const VersionGrid* grid) {
  const std::string label = grid || e.label.empty() ? "" : ", fontsize=9, fontcolor=\"#8a4a0b\", label=" + Quote(e.label);
  return fmt::format("  {} -> {} [id={}, class={}, {}{}, tooltip={}{}{}];\n", Quote(e.from), Quote(e.to),
                     Quote(fmt::format("{}:{}:{}", e.kind == "blocked" ? "blocked" : "edge", e.from, e.to)),
                     Quote(fmt::format("{}{}", e.kind, on_path ? " on-path" : "")), e.style,
                     on_path ? ", penwidth=3, color=\"#2b8a3e\"" : "", Quote(e.tooltip), label,
                     grid ? grid->EdgePos(e.from, e.to) : "");
}

// Every edge to draw: recommended, conditional (with risks), then the blocked marks
// that the view has no edge for.
std::vector<EdgeMark> EdgesToDraw(const Graph& view, const DotOptions& options) {
  std::vector<EdgeMark> out;
  std::set<std::pair<std::string, std::string>> drawn;
  for (const Edge& e : view.Edges()) {
    const std::string& a = view.node(e.from).version;
    const std::string& b = view.node(e.to).version;
    drawn.emplace(a, b);
    out.push_back({a, b, "recommended", "style=solid", "recommended"});
  }
  for (const ConditionalEdge& group : view.conditional_edges()) {
    std::string risks;
    bool braked = false;
    for (const Risk& r : group.risks) {
      risks += (risks.empty() ? "" : ", ") + r.name;
      braked = braked || r.name.starts_with(kBrakeRiskPrefix);
    }
    for (const ConditionalEdgeRef& ref : group.edges) {
      if (!view.Find(ref.from) || !view.Find(ref.to)) continue;
      drawn.emplace(ref.from, ref.to);
      if (braked) {
        out.push_back({ref.from, ref.to, "conditional brake", "style=solid, color=\"#c2255c\", penwidth=2.5",
                       "braked by failure reports; risks: " + risks, "brake: " + risks});
      } else {
        out.push_back({ref.from, ref.to, "conditional", "style=dashed, color=\"#d9822b\"", "risks: " + risks, risks});
      }
    }
  }
  for (const BlockedEdgeMark& b : options.blocked) {
    if (!view.Find(b.from) || !view.Find(b.to) || drawn.count({b.from, b.to})) continue;
    // Wider, with a bar for a head and a word: a thin dotted line alone was easy to miss.
    out.push_back({b.from, b.to, "blocked", "style=dotted, color=\"#c23030\", penwidth=2, arrowhead=tee, constraint=false",
                   b.why, "blocked"});
  }
  return out;
}

}  // namespace

std::string ViewDot(const Graph& view, const DotOptions& options) {
  std::set<std::string> highlight(options.highlight.begin(), options.highlight.end());
  std::set<std::pair<std::string, std::string>> hops;
  for (size_t i = 0; i + 1 < options.path.size(); ++i) hops.emplace(options.path[i], options.path[i + 1]);
  highlight.insert(options.path.begin(), options.path.end());

  const std::vector<NodeIndex> order = VersionOrder(view);
  const std::vector<EdgeMark> edges = EdgesToDraw(view, options);
  std::optional<VersionGrid> grid;
  if (edges.size() > kLayeredEdgeLimit) grid.emplace(view, order);

  std::string dot = "digraph cincinnati {\n";
  dot += grid ? "  graph [layout=nop2, splines=true" : "  graph [rankdir=LR, ranksep=0.6, nodesep=0.15";
  dot += ", outputorder=edgesfirst, fontname=\"Helvetica\", fontsize=12";
  if (!options.title.empty()) dot += ", labelloc=t, label=" + Quote(options.title);
  dot += "];\n  node [shape=box, style=\"rounded,filled\", fillcolor=\"#eef3fb\", color=\"#4a6fa5\", "
         "fontname=\"Helvetica\", fontsize=11];\n";
  // Many edges in the grid: thinner and translucent, so that the releases stay legible.
  dot += grid ? "  edge [color=\"#4a6fa570\", penwidth=0.7, arrowsize=0.5];\n" : "  edge [color=\"#4a6fa5\", arrowsize=0.6, fontname=\"Helvetica\"];\n";
  for (NodeIndex i : order) {
    const Node& n = view.node(i);
    const bool on = highlight.count(n.version) > 0;
    auto url = n.metadata.find("url");
    dot += fmt::format("  {} [id={}, class={}{}{}{}];\n", Quote(n.version), Quote("release:" + n.version),
                       Quote(on ? "release highlighted" : "release"),
                       on ? ", penwidth=2.5, fillcolor=\"#ffe9a8\"" : "",
                       url != n.metadata.end() ? ", tooltip=" + Quote(url->second) : "",
                       grid ? grid->NodePos(n.version) : "");
  }
  for (const EdgeMark& e : edges) dot += EdgeLine(e, hops.count({e.from, e.to}) > 0, grid ? &*grid : nullptr);
  return dot + "}\n";
}

Result<std::string> RenderDot(const std::string& dot, std::string_view format) {
  if (format == "dot") return dot;
  if (format != "svg" && format != "png") {
    return Status::InvalidArgument(fmt::format("format '{}': use svg, png or dot", format));
  }
  // Graphviz keeps global state (its error handler, its plugin registry): one at a time.
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  static GVC_t* gvc = gvContext();  // kept for the process: loading plugins is costly
  agseterr(AGMAX);  // keep messages off stderr; aglasterr() hands them to the caller
  Agraph_t* g = agmemread(dot.c_str());
  if (g == nullptr) {
    char* why = aglasterr();
    std::string message = why ? std::string(TrimWhitespace(why)) : "syntax error";
    std::free(why);
    return Status::InvalidArgument("graphviz could not read the DOT text: " + message);
  }
  // The DOT text names its engine when it is not dot (the version grid's nop2).
  const char* engine = agget(g, const_cast<char*>("layout"));
  if (gvLayout(gvc, g, engine && *engine ? engine : "dot") != 0) {
    agclose(g);
    return Status::Internal("graphviz could not lay the graph out");
  }
  char* data = nullptr;
  unsigned int length = 0;
  int rc = gvRenderData(gvc, g, std::string(format).c_str(), &data, &length);
  std::string out = rc == 0 && data ? std::string(data, length) : std::string();
  if (data) gvFreeRenderData(data);
  gvFreeLayout(gvc, g);
  agclose(g);
  if (rc != 0) return Status::Internal(fmt::format("graphviz has no '{}' renderer here", format));
  return out;
}

}  // namespace cincinnati::ui
