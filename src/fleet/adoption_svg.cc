// The adoption chart of a fleet simulation, as a plain SVG document: one line per
// version (share of the fleet on it, hour by hour; the ten versions with the highest
// peak), the failed clusters, and per failing edge the clusters that took it (its
// exposure), with each brake drawn as a vertical line at its time. The margins and the
// height are measured from the labels and the legend's rows (long release names, many
// failing edges), so that no text is clipped and the legend never covers the plot.
#include <fmt/format.h>

#include <algorithm>

#include "core/date_time.h"
#include "core/semver.h"
#include "fleet/fleet_results.h"

namespace cincinnati::fleet {
namespace {

// The plot's own size; the margins around it are measured from what they hold.
constexpr double kPlotWidth = 680, kPlotHeight = 430, kTop = 40, kBottom = 50, kFontSize = 12, kTitleSize = 15;
constexpr double kLegendRow = 18, kLegendGap = 16, kLegendSample = 30;
constexpr const char* kPalette[] = {"#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#17becf",
                                    "#7f7f7f", "#bcbd22", "#e377c2", "#393b79", "#637939"};

// A generous width for `text` in sans-serif at `size` (no font metrics here): wide
// enough for digits and most letters, so that labels are given room, never clipped.
double TextWidth(std::string_view text, double size) { return static_cast<double>(text.size()) * size * 0.62; }

std::string Escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

// Where the plot sits: the left margin holds the share labels, the right one the
// legend's longest entry, and the height grows with the legend's rows.
struct Layout {
  double left = 0, width = 0, height = 0;
  double plot_right() const { return left + kPlotWidth; }
  double plot_bottom() const { return kTop + kPlotHeight; }
  double legend_x() const { return plot_right() + kLegendGap; }
  static Layout For(const std::vector<std::string>& legend, const std::string& title) {
    double widest = 0;
    for (const std::string& entry : legend) widest = std::max(widest, TextWidth(entry, kFontSize));
    Layout out;
    out.left = std::max(60.0, TextWidth("100%", kFontSize) + 16);
    const double right = kLegendGap + kLegendSample + widest + 16;
    out.width = std::max(out.left + kPlotWidth + right, out.left + TextWidth(title, kTitleSize) + 16);
    const double legend_bottom = kTop + 14 + kLegendRow * static_cast<double>(legend.size());
    out.height = std::max(kTop + kPlotHeight + kBottom, legend_bottom + 8);
    return out;
  }
};

struct Frame {
  Layout at;
  int64_t start, end;
  double clusters;
  double X(int64_t t) const {
    return at.left + kPlotWidth * static_cast<double>(t - start) / static_cast<double>(std::max<int64_t>(1, end - start));
  }
  double Y(double count) const { return at.plot_bottom() - kPlotHeight * count / std::max(1.0, clusters); }
};

template <typename Fn>
std::string Line(const FleetResults& r, const Frame& f, Fn count, const char* color, const char* dash) {
  std::string points;
  for (const AdoptionRow& row : r.adoption) points += fmt::format("{:.1f},{:.1f} ", f.X(row.time), f.Y(count(row)));
  return fmt::format(R"(<polyline fill="none" stroke="{}" stroke-width="2" stroke-dasharray="{}" points="{}"/>)"
                     "\n",
                     color, dash, points);
}

std::string Axes(const Frame& f) {
  std::string out;
  const double x0 = f.at.left, x1 = f.at.plot_right(), y0 = f.at.plot_bottom(), y1 = kTop;
  out += fmt::format(R"(<rect id="plot" x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#333"/>)"
                     "\n",
                     x0, y1, x1 - x0, y0 - y1);
  for (int pct = 0; pct <= 100; pct += 20) {
    const double y = f.Y(f.clusters * pct / 100);
    out += fmt::format(R"(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" stroke="#ddd"/><text x="{}" y="{:.1f}" text-anchor="end">{}%</text>)"
                       "\n",
                       x0, y, x1, y, x0 - 6, y + 4, pct);
  }
  const int64_t span = f.end - f.start;
  const int64_t step = span > 4 * 86400 ? 86400 * ((span / 86400 + 13) / 14) : span > 12 * 3600 ? 6 * 3600 : 3600;
  for (int64_t t = f.start; t <= f.end; t += step) {
    const int64_t hours = (t - f.start) / 3600;
    const std::string label = hours % 24 == 0 ? fmt::format("day {}", hours / 24) : fmt::format("{}h", hours);
    out += fmt::format(R"(<line x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2}" stroke="#ddd"/><text x="{0:.1f}" y="{3}" text-anchor="middle">{4}</text>)"
                       "\n",
                       f.X(t), y1, y0, y0 + 18, label);
  }
  return out;
}

std::string LegendItem(const Layout& at, int row, const std::string& color, const char* dash, const std::string& text) {
  const double x = at.legend_x(), y = kTop + 14 + row * kLegendRow;
  return fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="2" stroke-dasharray="{}"/><text x="{}" y="{}">{}</text>)"
                     "\n",
                     x, y - 4, x + 24, y - 4, color, dash, x + 30, y, Escape(text));
}


// The versions drawn: the ten with the highest peak, in version order.
std::vector<size_t> DrawnVersions(const FleetResults& r) {
  std::vector<std::pair<uint32_t, size_t>> peaks;  // (peak, version)
  for (size_t v = 0; v < r.version_names.size(); ++v) {
    uint32_t peak = 0;
    for (const AdoptionRow& row : r.adoption) peak = std::max(peak, v < row.per_version.size() ? row.per_version[v] : 0u);
    if (peak > 0) peaks.emplace_back(peak, v);
  }
  std::sort(peaks.begin(), peaks.end(), std::greater<>());
  if (peaks.size() > 10) peaks.resize(10);
  std::sort(peaks.begin(), peaks.end(), [&](const auto& a, const auto& b) {
    auto va = Version::Parse(r.version_names[a.second]), vb = Version::Parse(r.version_names[b.second]);
    return va.ok() && vb.ok() ? *va < *vb : a.second < b.second;
  });
  std::vector<size_t> out;
  for (const auto& p : peaks) out.push_back(p.second);
  return out;
}

// A brake's mark: a vertical line at its time, its label beside it inside the plot
// (to its left when it would run past the plot's right edge), one label row per edge.
std::string BrakeMark(const Frame& f, int64_t since, size_t edge, const std::string& name) {
  const double x = f.X(since);
  const std::string label = "brake " + name;
  const size_t rows = static_cast<size_t>((kPlotHeight - 20) / 14);
  const bool left = x + 4 + TextWidth(label, kFontSize) > f.at.plot_right();
  return fmt::format(R"(<line x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2}" stroke="#000" stroke-width="1.5"/>)"
                     R"(<text x="{3:.1f}" y="{4}" text-anchor="{5}">{6}</text>)"
                     "\n",
                     x, kTop, f.at.plot_bottom(), left ? x - 4 : x + 4, kTop + 14 + 14 * static_cast<double>(edge % rows),
                     left ? "end" : "start", Escape(label));
}

}  // namespace

std::string AdoptionSvg(const FleetResults& r) {
  const std::vector<size_t> versions = DrawnVersions(r);
  std::vector<std::string> entries;
  for (size_t v : versions) entries.push_back("on " + r.version_names[v]);
  entries.push_back("failed (all edges)");
  for (const EdgeResult& edge : r.edges) entries.push_back("took " + edge.rule.from + " -> " + edge.rule.to);
  const std::string title = fmt::format("{} clusters on {} ({}), from {}, brakes {}", r.clusters, r.channel, r.arch,
                                        FormatUnixSeconds(r.start), r.brakes ? "on" : "off");
  const Frame f{Layout::For(entries, title), r.start, r.end, static_cast<double>(r.clusters)};
  std::string body = Axes(f), legend;
  int row = 0;
  for (size_t i = 0; i < versions.size(); ++i) {
    const size_t v = versions[i];
    const char* color = kPalette[i % 10];
    body += Line(r, f, [v](const AdoptionRow& a) { return v < a.per_version.size() ? a.per_version[v] : 0.0; }, color, "none");
    legend += LegendItem(f.at, row, color, "none", entries[row]);
    ++row;
  }
  body += Line(r, f, [](const AdoptionRow& a) { return static_cast<double>(a.failed); }, "#d62728", "6,3");
  legend += LegendItem(f.at, row, "#d62728", "6,3", entries[row]);
  ++row;
  for (size_t e = 0; e < r.edges.size(); ++e) {
    const EdgeResult& edge = r.edges[e];
    body += Line(r, f, [e](const AdoptionRow& a) { return static_cast<double>(a.edge_took[e]); }, "#ff7f0e", "2,3");
    legend += LegendItem(f.at, row, "#ff7f0e", "2,3", entries[row]);
    ++row;
    if (edge.brake) body += BrakeMark(f, edge.brake->since, e, edge.rule.from + " -> " + edge.rule.to);
  }
  return fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{0}" height="{1}" viewBox="0 0 {0} {1}" font-family="sans-serif" font-size="{2}">)"
                     "\n"
                     R"(<rect width="100%" height="100%" fill="#fff"/><text x="{3}" y="24" font-size="{4}">{5}</text>)"
                     "\n{6}<g id=\"legend\">\n{7}</g>\n</svg>\n",
                     f.at.width, f.at.height, kFontSize, f.at.left, kTitleSize, Escape(title), body, legend);
}

}  // namespace cincinnati::fleet
