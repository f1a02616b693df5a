// `serve` with channel-target views and a view cache budget of a few views: its
// /metrics counts the view cache's hits, misses and evictions and shows its bytes and
// entries, as requests come.
#include <gtest/gtest.h>

#include <string>

#include "service_util.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;
using testing::Get;
using testing::ServiceProcess;
using testing::WaitFor;

// The value of the unlabelled sample `name` in a Prometheus text page; -1 when absent.
double Sample(const std::string& page, const std::string& name) {
  const std::string line_start = "\n" + name + " ";
  size_t at = page.find(line_start);
  if (at == std::string::npos) return -1;
  return std::stod(page.substr(at + line_start.size()));
}

TEST(ViewCacheMetricsTest, MetricsCountHitsMissesAndEvictions) {
  const fs::path example = testing::Examples() / "ocp-4x";
  // 8 KiB: stable-4.13's channel-target views (0.6 to 3 KB) cost 1.2 to 4.3 KB each
  // (body, gzip estimate, bookkeeping), so a few fit and the five versions do not.
  ServiceProcess serve("serve", {"--releases", (example / "releases").string(), "--graph-data",
                                 (example / "graph-data").string(), "--views.channel_targets", "*",
                                 "--views.max_cached_bytes", "8192"});
  ASSERT_TRUE(serve.running()) << serve.log();
  ASSERT_TRUE(WaitFor([&] { return Get(serve.url("/readyz", "status")).status == 200; })) << serve.log();
  const std::string base = "/api/upgrades_info/graph?channel=stable-4.13&arch=amd64";
  const auto metrics = [&] { return Get(serve.url("/metrics", "status")).body; };
  const std::string before = metrics();
  for (const char* name : {"cincinnati_pe_view_cache_hits_total", "cincinnati_pe_view_cache_misses_total",
                           "cincinnati_pe_view_cache_evictions_total", "cincinnati_pe_view_cache_bytes",
                           "cincinnati_pe_view_cache_entries"}) {
    EXPECT_GE(Sample(before, name), 0) << name << " missing:\n" << before;
  }
  const double hits0 = Sample(before, "cincinnati_pe_view_cache_hits_total");
  const double misses0 = Sample(before, "cincinnati_pe_view_cache_misses_total");

  ASSERT_EQ(Get(serve.url(base + "&version=4.13.1")).status, 200);
  ASSERT_EQ(Get(serve.url(base + "&version=4.13.1")).status, 200);
  ASSERT_EQ(Get(serve.url(base)).status, 200);  // precomputed: a hit
  std::string page = metrics();
  EXPECT_EQ(Sample(page, "cincinnati_pe_view_cache_misses_total"), misses0 + 1) << page;
  EXPECT_EQ(Sample(page, "cincinnati_pe_view_cache_hits_total"), hits0 + 2) << page;
  EXPECT_EQ(Sample(page, "cincinnati_pe_view_cache_entries"), 1) << page;
  EXPECT_GT(Sample(page, "cincinnati_pe_view_cache_bytes"), 0) << page;

  for (const char* v : {"4.12.3", "4.12.4", "4.13.0", "4.13.1", "4.13.2", "4.12.3", "4.12.4", "4.13.0"}) {
    ASSERT_EQ(Get(serve.url(base + "&version=" + v)).status, 200) << v;
  }
  page = metrics();
  EXPECT_GT(Sample(page, "cincinnati_pe_view_cache_evictions_total"), 0) << page;
  EXPECT_LE(Sample(page, "cincinnati_pe_view_cache_bytes"), 8192) << page;
  EXPECT_LT(Sample(page, "cincinnati_pe_view_cache_entries"), 5) << page;
  EXPECT_GT(Sample(page, "cincinnati_pe_view_cache_misses_total"), misses0 + 5) << "evicted views computed again";
}

// serve's builder refreshes every second to the same graph: its engine keeps the views it
// computed (no miss after a refresh), as an engine whose HTTP upstream is unchanged does;
// a view cache made anew at every refresh ran the chain again for every key.
TEST(ViewCacheMetricsTest, ARefreshToTheSameGraphKeepsTheViews) {
  const fs::path example = testing::Examples() / "ocp-4x";
  ServiceProcess serve("serve", {"--releases", (example / "releases").string(), "--graph-data",
                                 (example / "graph-data").string(), "--views.channel_targets", "*",
                                 "--service.pause_secs", "1"});
  ASSERT_TRUE(serve.running()) << serve.log();
  ASSERT_TRUE(WaitFor([&] { return Get(serve.url("/readyz", "status")).status == 200; })) << serve.log();
  const auto metrics = [&] { return Get(serve.url("/metrics", "status")).body; };
  const std::string url = "/api/upgrades_info/graph?channel=stable-4.13&arch=amd64&version=4.13.1";
  ASSERT_EQ(Get(serve.url(url)).status, 200);
  const std::string before = metrics();
  const double scrapes = Sample(before, "cincinnati_gb_graph_upstream_scrapes_total");
  const double misses = Sample(before, "cincinnati_pe_view_cache_misses_total");
  ASSERT_GE(scrapes, 1) << before;
  ASSERT_TRUE(WaitFor([&] { return Sample(metrics(), "cincinnati_gb_graph_upstream_scrapes_total") >= scrapes + 2; }))
      << "the builder did not refresh\n" << serve.log();
  ASSERT_EQ(Get(serve.url(url)).status, 200);
  const std::string after = metrics();
  EXPECT_EQ(Sample(after, "cincinnati_pe_view_cache_misses_total"), misses) << after;
  EXPECT_EQ(Sample(after, "cincinnati_pe_view_cache_entries"), 1) << after;
}

}  // namespace
}  // namespace cincinnati
