// The adoption chart of a fleet simulation, as a plain SVG document: one line per
// version (share of the fleet on it, hour by hour; the ten versions with the highest
// peak), the failed clusters, and per failing edge the clusters that took it (its
// exposure), with each brake drawn as a vertical line at its time.
#include <fmt/format.h>

#include <algorithm>

#include "core/date_time.h"
#include "core/semver.h"
#include "fleet/fleet_results.h"

namespace cincinnati::fleet {
namespace {

constexpr double kWidth = 960, kHeight = 520, kLeft = 60, kRight = 220, kTop = 40, kBottom = 50;
constexpr const char* kPalette[] = {"#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#17becf",
                                    "#7f7f7f", "#bcbd22", "#e377c2", "#393b79", "#637939"};

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

struct Frame {
  int64_t start, end;
  double clusters;
  double X(int64_t t) const {
    return kLeft + (kWidth - kLeft - kRight) * static_cast<double>(t - start) / static_cast<double>(std::max<int64_t>(1, end - start));
  }
  double Y(double count) const { return kHeight - kBottom - (kHeight - kTop - kBottom) * count / std::max(1.0, clusters); }
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
  const double x0 = kLeft, x1 = kWidth - kRight, y0 = kHeight - kBottom, y1 = kTop;
  out += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#333"/>)"
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

std::string LegendItem(int row, const std::string& color, const char* dash, const std::string& text) {
  const double x = kWidth - kRight + 16, y = kTop + 14 + row * 18;
  return fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="2" stroke-dasharray="{}"/><text x="{}" y="{}">{}</text>)"
                     "\n",
                     x, y - 4, x + 24, y - 4, color, dash, x + 30, y, Escape(text));
}

}  // namespace

std::string AdoptionSvg(const FleetResults& r) {
  const Frame f{r.start, r.end, static_cast<double>(r.clusters)};
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
  std::string body = Axes(f), legend;
  int row = 0;
  for (size_t i = 0; i < peaks.size(); ++i) {
    const size_t v = peaks[i].second;
    const char* color = kPalette[i % 10];
    body += Line(r, f, [v](const AdoptionRow& a) { return v < a.per_version.size() ? a.per_version[v] : 0.0; }, color, "none");
    legend += LegendItem(row++, color, "none", "on " + r.version_names[v]);
  }
  body += Line(r, f, [](const AdoptionRow& a) { return static_cast<double>(a.failed); }, "#d62728", "6,3");
  legend += LegendItem(row++, "#d62728", "6,3", "failed (all edges)");
  for (size_t e = 0; e < r.edges.size(); ++e) {
    const EdgeResult& edge = r.edges[e];
    const std::string name = edge.rule.from + " -> " + edge.rule.to;
    body += Line(r, f, [e](const AdoptionRow& a) { return static_cast<double>(a.edge_took[e]); }, "#ff7f0e", "2,3");
    legend += LegendItem(row++, "#ff7f0e", "2,3", "took " + name);
    if (edge.brake) {
      const double x = f.X(edge.brake->since);
      body += fmt::format(R"(<line x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2}" stroke="#000" stroke-width="1.5"/>)"
                          R"(<text x="{3:.1f}" y="{4}">brake {5}</text>)"
                          "\n",
                          x, kTop, kHeight - kBottom, x + 4, kTop + 14 + 14 * static_cast<double>(e), Escape(name));
    }
  }
  const std::string title = fmt::format("{} clusters on {} ({}), from {}, brakes {}", r.clusters, r.channel, r.arch,
                                        FormatUnixSeconds(r.start), r.brakes ? "on" : "off");
  return fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" viewBox="0 0 {} {}" font-family="sans-serif" font-size="12">)"
                     "\n"
                     R"(<rect width="100%" height="100%" fill="#fff"/><text x="{}" y="24" font-size="15">{}</text>)"
                     "\n{}{}</svg>\n",
                     kWidth, kHeight, kWidth, kHeight, kLeft, Escape(title), body, legend);
}

}  // namespace cincinnati::fleet
