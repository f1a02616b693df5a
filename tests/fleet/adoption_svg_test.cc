// The simulator's adoption chart (adoption.svg) gives its labels room: with long release
// names and many series, every text lies inside the picture and the legend stays off
// the plot, by an estimate of the text boxes and as Chromium lays the text out.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fleet/fleet_results.h"
#include "test_util.h"
#include "webdriver.h"

namespace cincinnati::fleet {
namespace {

// Twelve versions with nightly-length names, all on the fleet at some hour, and sixteen
// failing edges, four of them braked near the end (their labels at the plot's right).
FleetResults ManySeries() {
  FleetResults r;
  r.clusters = 1000;
  r.start = 1'700'000'000;
  r.end = r.start + 3 * 86400;
  r.channel = "candidate-4.14-with-a-rather-long-name";
  r.arch = "multi";
  for (int v = 0; v < 12; ++v) r.version_names.push_back(fmt::format("4.14.0-0.nightly-2024-06-{:02}-123456-x86_64", v + 1));
  for (int e = 0; e < 16; ++e) {
    EdgeResult edge;
    edge.rule.from = r.version_names[e % 12];
    edge.rule.to = r.version_names[(e + 1) % 12];
    if (e % 4 == 0) edge.brake = ServiceBrake{edge.rule.from, edge.rule.to, "on", r.end - 3600};
    r.edges.push_back(edge);
  }
  for (int h = 0; h <= 72; ++h) {
    AdoptionRow row;
    row.time = r.start + h * 3600;
    row.per_version.assign(12, 0);
    row.per_version[static_cast<size_t>(h / 6) % 12] = 1000;
    row.edge_took.assign(16, static_cast<uint64_t>(h));
    row.edge_failed.assign(16, 0);
    r.adoption.push_back(row);
  }
  return r;
}

struct Box {
  double left, top, right, bottom;
  bool Inside(const Box& o) const { return left >= o.left && top >= o.top && right <= o.right && bottom <= o.bottom; }
  bool Overlaps(const Box& o) const { return left < o.right && o.left < right && top < o.bottom && o.top < bottom; }
};

double Number(const std::string& tag, const std::string& name, double fallback = 0) {
  std::smatch m;
  if (!std::regex_search(tag, m, std::regex(" " + name + "=\"([-0-9.]+)\""))) return fallback;
  return std::stod(m[1]);
}

struct Text {
  std::string content;
  Box box;
  bool in_legend;
};

// Every <text> with a box estimated at 0.6 em a character (sans-serif's digits are
// 0.56 em), ascent 0.8 em and descent 0.25 em, anchored as it says.
std::vector<Text> Texts(const std::string& svg) {
  std::vector<Text> out;
  const size_t legend = svg.find("<g id=\"legend\">");
  static const std::regex text("<text([^>]*)>([^<]*)</text>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), text); it != std::sregex_iterator(); ++it) {
    const std::string attrs = (*it)[1];
    std::string content = std::regex_replace(std::string((*it)[2]), std::regex("&[a-z]+;"), "_");
    const double size = Number(attrs, "font-size", 12), x = Number(attrs, "x"), y = Number(attrs, "y");
    const double width = static_cast<double>(content.size()) * size * 0.6;
    const double left = attrs.find("text-anchor=\"end\"") != std::string::npos      ? x - width
                        : attrs.find("text-anchor=\"middle\"") != std::string::npos ? x - width / 2
                                                                                    : x;
    out.push_back({content, {left, y - 0.8 * size, left + width, y + 0.25 * size},
                   legend != std::string::npos && static_cast<size_t>(it->position()) > legend});
  }
  return out;
}

TEST(AdoptionSvgTest, LongNamesAndManySeriesFitInsideThePictureAndTheLegendKeepsOffThePlot) {
  const std::string svg = AdoptionSvg(ManySeries());
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, std::regex(R"re(viewBox="0 0 ([0-9.]+) ([0-9.]+)")re"))) << svg.substr(0, 300);
  const Box picture{0, 0, std::stod(m[1]), std::stod(m[2])};
  std::smatch p;
  ASSERT_TRUE(std::regex_search(svg, p, std::regex(R"(<rect id="plot"[^>]*>)")));
  const std::string plot_tag = p[0];
  const Box plot{Number(plot_tag, "x"), Number(plot_tag, "y"), Number(plot_tag, "x") + Number(plot_tag, "width"),
                 Number(plot_tag, "y") + Number(plot_tag, "height")};
  const std::vector<Text> texts = Texts(svg);
  size_t legend_rows = 0;
  for (const Text& t : texts) {
    EXPECT_TRUE(t.box.Inside(picture)) << "'" << t.content << "' at [" << t.box.left << "," << t.box.top << ".." << t.box.right
                                       << "," << t.box.bottom << "] leaves the " << picture.right << "x" << picture.bottom << " picture";
    if (t.in_legend) {
      ++legend_rows;
      EXPECT_FALSE(t.box.Overlaps(plot)) << "the legend's '" << t.content << "' covers the plot";
    }
  }
  EXPECT_EQ(legend_rows, 10u + 1 + 16) << "ten versions, the failed clusters and each failing edge";
}

// The same picture in Chromium: every text's real box (getBBox) inside the picture,
// the legend's outside the plot.
TEST(AdoptionSvgTest, ChromiumDrawsEveryLabelInsideThePicture) {
  ASSERT_TRUE(std::filesystem::exists(testing::kChromeDriver) && std::filesystem::exists(testing::kChromium))
      << "needs Debian's chromium and chromium-driver (scripts/deps.sh --test installs them)";
  testing::TempDir dir;
  testing::WriteFile(dir / "adoption.svg", AdoptionSvg(ManySeries()));
  testing::WebDriver browser;
  ASSERT_EQ(browser.error(), "");
  browser.Navigate("file://" + (dir / "adoption.svg").string());
  ASSERT_TRUE(browser.WaitUntil("return document.querySelectorAll('text').length > 0;"));
  const std::string outside = browser.Execute(
      "const svg = document.documentElement, v = svg.viewBox.baseVal, plot = document.getElementById('plot').getBBox();"
      "const bad = [];"
      "for (const t of document.querySelectorAll('text')) {"
      "  const b = t.getBBox();"
      "  if (b.x < v.x || b.y < v.y || b.x + b.width > v.x + v.width || b.y + b.height > v.y + v.height) bad.push('outside: ' + t.textContent);"
      "  const legend = !!t.closest('#legend');"
      "  if (legend && b.x < plot.x + plot.width && plot.x < b.x + b.width && b.y < plot.y + plot.height && plot.y < b.y + b.height)"
      "    bad.push('on the plot: ' + t.textContent);"
      "}"
      "return bad;");
  EXPECT_EQ(outside, "[]");
}

}  // namespace
}  // namespace cincinnati::fleet
