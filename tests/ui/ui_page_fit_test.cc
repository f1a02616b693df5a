// The graph page at a 1400x900 window, as a new user's trial found it: a wide graph (a
// brake's long risk name on an edge) is scaled to the graph area and can be zoomed back
// to 1:1; ticking "blocked edges" shows them without moving a release; "Why (not)?"
// asks about any release of the graph and shows why an unknown one cannot be
// explained; a braked edge is drawn apart from other conditional edges, with its legend
// row.
#include <gtest/gtest.h>

#include <string>

#include "ui_browser_util.h"

namespace cincinnati::ui_browser {
namespace {

// The releases drawn that do not lie inside #graph's box, as JSON (empty: "[]").
std::string ReleasesOutsideTheGraphArea(WebDriver& browser) {
  return browser.Execute(
      "const area = document.getElementById('graph').getBoundingClientRect();"
      "return [...document.querySelectorAll('#graph g.release')].filter((g) => {"
      "  const r = g.getBoundingClientRect();"
      "  return r.left < area.left || r.top < area.top || r.right > area.right || r.bottom > area.bottom;"
      "}).map((g) => g.id);");
}

// Every drawn release's box, as JSON: where the layout put it.
std::string ReleasePositions(WebDriver& browser) {
  return browser.Execute(
      "return [...document.querySelectorAll('#graph g.release')].map((g) => {"
      "  const r = g.getBoundingClientRect(); return g.id + '@' + [r.left, r.top, r.width, r.height].join(',');"
      "});");
}

// The blocked edges that the page shows (a box of some size), and all that it drew.
std::string VisibleBlockedEdges(WebDriver& browser) {
  return browser.Execute(
      "return [...document.querySelectorAll('#graph g[id^=\"blocked:\"]')]"
      ".filter((g) => g.getBoundingClientRect().width > 0).length;");
}

void OpenChannel(WebDriver& browser, ServiceProcess& serve, const std::string& channel) {
  browser.Navigate(serve.url("/#channel=" + channel + "&arch=amd64"));
  ASSERT_TRUE(browser.WaitUntil("const s = document.querySelector('#graph svg'); "
                                "return !!s && s.textContent.includes('" + channel + " (amd64)') && "
                                "document.getElementById('status').textContent.includes('releases');"))
      << Text(browser, "status");
}

TEST_F(UiBrowserTest, TickingBlockedEdgesShowsThemWithoutMovingARelease) {
  WebDriver& browser = *browser_;
  ASSERT_NO_FATAL_FAILURE(OpenChannel(browser, *serve_, "stable-4.13"));
  const std::string before = ReleasePositions(browser);
  ASSERT_NE(before, "[]");
  EXPECT_EQ(VisibleBlockedEdges(browser), "0");
  ASSERT_NO_FATAL_FAILURE(ClickOn(browser, "#blocked"));
  ASSERT_TRUE(browser.WaitUntil("return document.getElementById('status').textContent.includes('blocked');"))
      << Text(browser, "status");
  EXPECT_NE(VisibleBlockedEdges(browser), "0");
  EXPECT_EQ(ReleasePositions(browser), before);
  Screenshot(browser, "fit-1-blocked-edges-shown.png");
  ASSERT_NO_FATAL_FAILURE(ClickOn(browser, "#blocked"));
  EXPECT_EQ(VisibleBlockedEdges(browser), "0");
  EXPECT_EQ(ReleasePositions(browser), before);
}

TEST_F(UiBrowserTest, WhyNotAsksAboutAnyReleaseOfTheGraph) {
  WebDriver& browser = *browser_;
  ASSERT_NO_FATAL_FAILURE(OpenChannel(browser, *serve_, "stable-4.13"));
  EXPECT_EQ(browser.Execute("return !!document.getElementById('release:4.13.3');"), "false") << "4.13.3 is not in stable-4.13";
  // The fields offer every release of the graph once used: 4.13.3 (fast-4.13), 4.12.0 (stable-4.12).
  ASSERT_NO_FATAL_FAILURE(Type(browser, "to", "4.13.3"));
  ASSERT_TRUE(browser.WaitUntil("const o = [...document.querySelectorAll('#releases option')].map((o) => o.value);"
                                "return o.includes('4.13.3') && o.includes('4.12.0');"))
      << browser.Execute("return document.getElementById('releases').innerHTML;");
  ASSERT_NO_FATAL_FAILURE(Type(browser, "from", "4.12.3"));
  ASSERT_NO_FATAL_FAILURE(ClickOn(browser, "#explain-button"));
  ASSERT_TRUE(browser.WaitUntil("return !!document.querySelector('#reasons li');")) << Text(browser, "explain-result");
  EXPECT_NE(Text(browser, "explain-result").find("4.12.3 → 4.13.3"), std::string::npos) << Text(browser, "explain-result");

  // A release the graph does not have: the service's sentence, naming it.
  ASSERT_NO_FATAL_FAILURE(Type(browser, "from", "4.99.1"));
  ASSERT_NO_FATAL_FAILURE(ClickOn(browser, "#explain-button"));
  ASSERT_TRUE(browser.WaitUntil("return !!document.getElementById('explain-stop');")) << Text(browser, "explain-result");
  EXPECT_NE(Text(browser, "explain-stop").find("4.99.1"), std::string::npos) << Text(browser, "explain-stop");
  Screenshot(browser, "fit-2-why-not-unknown.png");
}

TEST_F(UiBrowserAdoptionTest, ABrakedEdgeIsDrawnAsABrakeAndTheWideGraphFitsTheWindow) {
  ASSERT_NO_FATAL_FAILURE(BrakeTheEdge());
  WebDriver& browser = *browser_;
  ASSERT_NO_FATAL_FAILURE(OpenChannel(browser, *serve_, "stable-4.13"));
  // The braked edge: its own class and label, and the legend's row for it.
  EXPECT_EQ(browser.Execute("const g = document.getElementById('edge:4.13.1:4.13.2');"
                            "return !!g && g.classList.contains('brake') && g.textContent.includes('brake: AutomaticallyBlocked_');"),
            "true")
      << browser.Execute("const g = document.getElementById('edge:4.13.1:4.13.2'); return g ? g.outerHTML : null;");
  EXPECT_EQ(browser.Execute("return [...document.querySelectorAll('#graph g.brake')].map((g) => g.id).join();"),
            "\"edge:4.13.1:4.13.2\"");
  EXPECT_EQ(browser.Execute("const row = document.querySelector('#legend [data-kind=\"brake\"]');"
                            "return !!row && row.offsetHeight > 0 && !!row.querySelector('svg line');"),
            "true");

  // The graph, wider than its area at 1:1, is scaled to fit it: every release inside.
  EXPECT_EQ(ReleasesOutsideTheGraphArea(browser), "[]");
  Screenshot(browser, "fit-3-brake-fitted.png");
  ASSERT_NO_FATAL_FAILURE(ClickOn(browser, "#zoom"));
  EXPECT_EQ(browser.Execute("const g = document.getElementById('graph'); return g.scrollWidth > g.clientWidth;"), "true")
      << "at 1:1 the picture is wider than the graph area";
  EXPECT_NE(ReleasesOutsideTheGraphArea(browser), "[]");
  ASSERT_NO_FATAL_FAILURE(ClickOn(browser, "#zoom"));
  EXPECT_EQ(ReleasesOutsideTheGraphArea(browser), "[]");
}

}  // namespace
}  // namespace cincinnati::ui_browser
