// The graph builder service's refreshes: a scrape that overruns its timeout is
// cancelled and joined (the process has as many threads afterwards as before), runs
// never overlap, and Stop() ends a running refresh.
#include <gtest/gtest.h>

#include <dirent.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "builder/registry_source.h"
#include "fault_proxy.h"
#include "registry_util.h"
#include "graph_builder/graph_builder_service.h"

namespace cincinnati {
namespace {

using namespace std::chrono_literals;

size_t ThreadCount() {
  size_t n = 0;
  if (DIR* dir = ::opendir("/proc/self/task")) {
    while (dirent* e = ::readdir(dir)) n += e->d_name[0] != '.';
    ::closedir(dir);
  }
  return n;
}

double UpstreamErrors(const server::GraphBuilderService& service) {
  return testing::MetricValue(service.metrics().Render(), "cincinnati_gb_graph_upstream_errors_total");
}

TEST(RefreshCancelTest, TimedOutScrapeLeavesNoThreadRunning) {
  testing::LocalRegistry registry;
  ASSERT_TRUE(registry.ready()) << registry.log();
  for (const char* v : {"9.0.0", "9.0.1"}) {
    auto r = testing::RunCincinnati(std::string("release new --version ") + v + " --to " + registry.url() +
                                    "/cancel/release:" + v);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  testing::FaultProxy proxy(registry.url());
  RegistrySourceSettings s;
  s.registry = proxy.url();
  s.repository = "cancel/release";
  s.fetch_concurrency = 4;
  TransformChain chain;
  chain.push_back(std::make_unique<RegistryReleaseSource>(s));
  server::GraphBuilderOptions options;
  options.scrape_timeout = 1s;
  server::GraphBuilderService service(std::move(chain), options, "test");
  ASSERT_TRUE(service.RefreshOnce());
  const auto good = service.Latest();

  const size_t before = ThreadCount();
  proxy.stall_tags_ms = 60000;  // far past the timeout, and past the client's own 60 s
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(service.RefreshOnce());
  auto took = std::chrono::steady_clock::now() - start;
  // The run was stopped, not waited for: the stalled request would hold it 60 s.
  EXPECT_LT(took, 20s);
  EXPECT_EQ(UpstreamErrors(service), 1);
  EXPECT_EQ(service.Latest(), good);
  EXPECT_TRUE(testing::WaitFor([&] { return ThreadCount() <= before; }, 5s))
      << ThreadCount() << " threads, " << before << " before";

  proxy.stall_tags_ms = 0;
  EXPECT_TRUE(service.RefreshOnce());
  EXPECT_EQ(UpstreamErrors(service), 1);
}

// A step that holds the run until stopped (or 30 s), counting how many run at once.
class HoldingStep : public GraphTransform {
 public:
  std::string_view name() const override { return "holding-step"; }
  Result<Graph> Apply(Graph graph, TransformContext& context) const override {
    int now = ++running_;
    int seen = max_running_.load();
    while (now > seen && !max_running_.compare_exchange_weak(seen, now)) {
    }
    ++started_;
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, context.stop, std::chrono::milliseconds(hold_ms_.load()), [] { return false; });
    bool cancelled = context.stop.stop_requested();
    --running_;
    if (cancelled) ++cancelled_;
    return cancelled ? Result<Graph>(Status::Internal("holding-step cancelled")) : Result<Graph>(std::move(graph));
  }

  std::atomic<int> hold_ms_{30000};
  mutable std::atomic<int> running_{0}, max_running_{0}, started_{0}, cancelled_{0};
};

TEST(RefreshCancelTest, RefreshesNeverOverlapAndStopEndsTheRunningOne) {
  auto step = std::make_unique<HoldingStep>();
  HoldingStep* probe = step.get();
  probe->hold_ms_ = 100;
  TransformChain chain;
  chain.push_back(std::move(step));
  server::GraphBuilderOptions options;
  options.pause = 0ms;
  server::GraphBuilderService service(std::move(chain), options, "test");
  service.Start();  // refreshes back to back on its thread, while others ask for more
  std::vector<std::thread> callers;
  for (int i = 0; i < 3; ++i) {
    callers.emplace_back([&] {
      for (int j = 0; j < 3; ++j) service.RefreshOnce();
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_GE(probe->started_.load(), 9);
  EXPECT_EQ(probe->max_running_.load(), 1);

  probe->hold_ms_ = 30000;
  const int started = probe->started_.load();
  ASSERT_TRUE(testing::WaitFor([&] { return probe->started_.load() > started && probe->running_.load() == 1; }, 5s));
  auto stop_at = std::chrono::steady_clock::now();
  service.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - stop_at, 10s);  // not the step's 30 s
  EXPECT_EQ(probe->running_.load(), 0);
  EXPECT_GE(probe->cancelled_.load(), 1);
}

}  // namespace
}  // namespace cincinnati
