// The graph page's browser tests' shared parts: a running `serve` and a headless
// Chromium on it (tests/webdriver.h), and the steps a person takes on the page.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "service_util.h"
#include "test_util.h"
#include "update_report_util.h"
#include "http/client.h"
#include "webdriver.h"

namespace cincinnati::ui_browser {

namespace fs = std::filesystem;
using testing::Get;
using testing::ServiceProcess;
using testing::WaitFor;
using testing::WebDriver;

inline const fs::path kArtifacts = fs::path(CINCINNATI_ARTIFACTS) / "ui";

// A JSON array of strings as a set ('["a","b"]').
inline std::set<std::string> StringSet(const std::string& json) {
  std::set<std::string> out;
  size_t at = 0;
  while ((at = json.find('"', at)) != std::string::npos) {
    size_t end = json.find('"', at + 1);
    if (end == std::string::npos) break;
    out.insert(json.substr(at + 1, end - at - 1));
    at = end + 1;
  }
  return out;
}

// `document.getElementById(id).textContent`, as JSON text.
inline std::string Text(WebDriver& browser, const std::string& id) {
  return browser.Execute("const e = document.getElementById('" + id + "'); return e ? e.textContent : null;");
}

// Picks `value` in the <select id=`select`> with a real click on its option.
inline void Pick(WebDriver& browser, const std::string& select, const std::string& value) {
  auto option = browser.Find("xpath", "//select[@id='" + select + "']/option[text()='" + value + "']");
  ASSERT_TRUE(option.has_value()) << select << " has no option " << value;
  browser.Click(*option);
  ASSERT_EQ(browser.Execute("return document.getElementById('" + select + "').value;"), "\"" + value + "\"");
}

// A real click on the element `css` selects.
inline void ClickOn(WebDriver& browser, const std::string& css) {
  auto element = browser.Find("css selector", css);
  ASSERT_TRUE(element.has_value()) << "nothing matches " << css;
  browser.Click(*element);
}

// Clicks release `version` in the drawn graph and waits for its details.
inline void ClickRelease(WebDriver& browser, const std::string& version) {
  ASSERT_NO_FATAL_FAILURE(ClickOn(browser, "[id='release:" + version + "']"));
  ASSERT_TRUE(browser.WaitUntil("const e = document.getElementById('selected-version'); "
                                "return !!e && e.textContent === '" + version + "';"))
      << Text(browser, "details");
}

inline void Screenshot(WebDriver& browser, const std::string& name) {
  std::string why;
  EXPECT_TRUE(browser.Screenshot(kArtifacts / name, &why)) << name << ": " << why;
}

// Puts `value` in the text field `id` as typing would (focused first, then an input event).
inline void Type(WebDriver& browser, const std::string& id, const std::string& value) {
  ASSERT_EQ(browser.Execute("const e = document.getElementById('" + id + "'); e.focus(); e.value = '" + value +
                            "'; e.dispatchEvent(new Event('input', {bubbles: true})); return e.value;"),
            "\"" + value + "\"");
}

class UiBrowserTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(testing::Examples() / "ocp-4x"); }
  // `pause_secs`: a new graph (even an equal one) starts the page's pictures afresh.
  void Start(const fs::path& example, const std::string& pause_secs = "1", const std::vector<std::string>& extra = {}) {
    ASSERT_TRUE(fs::exists(testing::kChromeDriver) && fs::exists(testing::kChromium))
        << "the browser test needs Debian's chromium and chromium-driver (scripts/deps.sh --test installs them)";
    std::vector<std::string> args = {"--releases", (example / "releases").string(), "--graph-data", (example / "graph-data").string(),
                                     "--service.pause_secs", pause_secs};
    args.insert(args.end(), extra.begin(), extra.end());
    serve_ = std::make_unique<ServiceProcess>("serve", args);
    ASSERT_TRUE(WaitFor([&] { return Get(serve_->url("/readyz", "status")).status == 200; }, std::chrono::seconds(60)))
        << serve_->log();
    browser_ = std::make_unique<WebDriver>();
    ASSERT_EQ(browser_->error(), "");
  }
  void TearDown() override {
    browser_.reset();
    if (serve_) { EXPECT_EQ(serve_->Stop(), 0) << serve_->log(); }
  }
  std::unique_ptr<ServiceProcess> serve_;
  std::unique_ptr<WebDriver> browser_;
};

// The Adoption panel: clusters seen polling, by the version they last polled at, over
// time, on a `serve` that takes reports, its clock 600 times faster than real time (a
// sample every simulated 10 minutes, so about every real second). Twenty clusters poll
// at 4.13.1 and announce their updates to 4.13.2 (Started reports, as agents do for the
// default rule); five fail, and the edge is braked; the other fifteen poll at 4.13.2.
// The page draws a curve per version, the brake, and today's counts.
class UiBrowserAdoptionTest : public UiBrowserTest {
 protected:
  void SetUp() override {
    epoch_ = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    Start(testing::Examples() / "ocp-4x", "1",
          {"--reports.state_dir", (dir_ / "reports").string(), "--brakes.url_base", "https://updates.example.com/api/upgrades_info/v1/brakes", "--reports.min_poller_age_secs", "0", "--reports.min_polls", "1",
           "--testing.now", "2030-01-01T00:00:00Z", "--testing.time_scale", "600", "--testing.epoch", std::to_string(epoch_)});
  }
  // The service's clock: 2030-01-01 at real time epoch_, 600 times faster.
  int64_t ServiceNow() const {
    const double real = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    return 1893456000 + static_cast<int64_t>((real - static_cast<double>(epoch_)) * 600);
  }
  void Report(int n, const UpdateReport& report) {
    http::RequestOptions post;
    post.method = "POST";
    post.headers = {"Content-Type: application/json"};
    post.body = EncodeUpdateReport(report);
    auto r = http::Request(serve_->url("/api/upgrades_info/v1/reports?id=" + testing::TestClusterId(n)), post);
    ASSERT_EQ(r.status, 200) << r.body;
  }
  void Poll(int n, const std::string& version) {
    ASSERT_EQ(Get(serve_->url("/api/upgrades_info/graph?channel=stable-4.13&version=" + version + "&id=" + testing::TestClusterId(n)),
                  {"Accept: application/json"})
                  .status,
              200);
  }
  std::string Adoption() { return Get(serve_->url("/api/upgrades_info/v1/ui/adoption")).body; }
  // Twenty clusters at 4.13.1 start updating to 4.13.2 and report, five failed: the edge
  // is braked (a risk AutomaticallyBlocked_4_13_1_to_4_13_2), and the fifteen others poll
  // at 4.13.2.
  void BrakeTheEdge() {
    // Samples are taken by polls: the clusters go on polling until one is due.
    ASSERT_TRUE(WaitFor([&] {
      for (int n = 1; n <= 20; ++n) Poll(n, "4.13.1");
      return Adoption().find(R"("clusters":{"4.13.1":20})") != std::string::npos;
    })) << Adoption();
    // Started a service minute ago: on this clock the horizon (2 h) is 12 real seconds.
    const int64_t started = ServiceNow() - 60;
    for (int n = 1; n <= 20; ++n) {
      UpdateReport start = testing::TestReport(n, false, "a1", started);
      start.result = UpdateResult::kStarted;
      start.ended = 0;
      ASSERT_NO_FATAL_FAILURE(Report(n, start));
    }
    for (int n = 1; n <= 20; ++n) ASSERT_NO_FATAL_FAILURE(Report(n, testing::TestReport(n, n <= 5, "a1", started)));
    const std::string graph = "/api/upgrades_info/graph?channel=stable-4.13&version=4.13.1";
    ASSERT_TRUE(WaitFor([&] { return Get(serve_->url(graph), {"Accept: application/json"}).body.find("AutomaticallyBlocked_") != std::string::npos; },
                        std::chrono::seconds(30)));
    // The fifteen that updated poll at 4.13.2, in a later sample than the brake.
    ASSERT_TRUE(WaitFor([&] {
      for (int n = 6; n <= 20; ++n) Poll(n, "4.13.2");
      return Adoption().find(R"("clusters":{"4.13.1":5,"4.13.2":15}}]})") != std::string::npos;
    })) << Adoption();
  }
  testing::TempDir dir_;
  int64_t epoch_ = 0;
};

}  // namespace cincinnati::ui_browser
