// BM_ReportStore/S/T: update reports recorded per second by a graph builder's report
// store (reports/report_store.h), S = 0: SQLite (one process), 1: PostgreSQL (shared by
// replicas; needs CINCINNATI_BENCH_POSTGRES, a libpq URL of a database it may empty),
// with T threads each its own replica (store) at once. Batches of 16 reports from
// distinct clusters on 8 edges out of one version, a sixth of them failures, each
// batch deciding its edges against the default rule (a brake is decided, once, along
// the way): the work a policy engine's forwarded batch costs. "reports/s" is the rate.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "postgres/postgres_session.h"
#include "reports/brake_rule.h"
#include "reports/postgres_report_store.h"
#include "reports/sqlite_report_store.h"

namespace cincinnati {
namespace {

constexpr int kBatch = 16;
constexpr int64_t kNow = 1'900'000'000;

std::string ClusterId(uint64_t n) {
  return fmt::format("{:08x}-0000-4000-8000-{:012x}", static_cast<uint32_t>(n >> 32), n & 0xffffffffffffULL);
}

std::unique_ptr<reports::ReportStore> OpenStore(bool postgres, int replica, std::string& error) {
  if (postgres) {
    auto store = reports::PostgresReportStore::Open(std::getenv("CINCINNATI_BENCH_POSTGRES"), reports::ReportLedger::Options{});
    if (!store.ok()) error = store.status().message();
    return store.ok() ? std::move(store).value() : nullptr;
  }
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("report-store-bench-{}-{}", ::getpid(), replica);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto store = reports::SqliteReportStore::Open((dir / "reports.db").string(), reports::ReportLedger::Options{});
  if (!store.ok()) error = store.status().message();
  return store.ok() ? std::move(store).value() : nullptr;
}

std::atomic<uint64_t> next_cluster{1};

void BM_ReportStore(benchmark::State& state) {
  const bool postgres = state.range(0) == 1;
  if (postgres && !std::getenv("CINCINNATI_BENCH_POSTGRES")) {
    state.SkipWithError("set CINCINNATI_BENCH_POSTGRES to a libpq URL to measure the store on PostgreSQL");
    return;
  }
  static std::once_flag emptied;  // once per process, before any replica opens the tables
  if (postgres) {
    std::call_once(emptied, [] {
      postgres::PostgresSession admin(std::getenv("CINCINNATI_BENCH_POSTGRES"), "", "bench");
      (void)admin.Exec("DROP TABLE IF EXISTS reports, edge_clusters, edge_counts, edge_components, edge_epochs, brakes, brake_events");
    });
  }
  std::string error;
  std::unique_ptr<reports::ReportStore> store = OpenStore(postgres, state.thread_index(), error);
  if (!store) {
    state.SkipWithError(error.c_str());
    return;
  }
  const reports::BrakeRule rule;
  auto decide = [&](const reports::EdgeState& edge) -> std::optional<reports::BrakeRecord> {
    const reports::BrakeVerdict verdict = reports::Evaluate(edge.counts, rule);
    if (!verdict.brake) return std::nullopt;
    reports::BrakeRecord r;
    r.from = edge.from;
    r.to = edge.to;
    r.since = kNow;
    r.counts = edge.counts;
    r.lower_bound = verdict.lower_bound;
    r.message = "bench";
    return r;
  };
  int64_t recorded = 0;
  for (auto _ : state) {
    std::vector<UpdateReport> batch;
    for (int i = 0; i < kBatch; ++i) {
      const uint64_t n = next_cluster++;
      UpdateReport r;
      r.cluster_id = ClusterId(n);
      r.attempt = std::string(1, 'a');  // not = "a": GCC 12 warns falsely (-Wrestrict) on assigning a short literal here
      r.from = "4.13.1";
      r.to = fmt::format("4.13.{}", 2 + n % 8);
      r.arch = "amd64";
      r.channel = "stable-4.13";
      r.result = n % 6 == 0 ? UpdateResult::kFailed : UpdateResult::kCompleted;
      r.reason = n % 6 == 0 ? "ClusterOperatorDegraded" : "";
      r.component = n % 6 == 0 ? "network" : "";
      r.started = kNow - 3600;
      r.ended = kNow - 60;
      batch.push_back(std::move(r));
    }
    auto done = store->Record(batch, kNow, decide);
    if (!done.ok()) {
      state.SkipWithError(done.status().message().c_str());
      return;
    }
    recorded += kBatch;
  }
  state.counters["reports/s"] = benchmark::Counter(static_cast<double>(recorded), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ReportStore)->Args({0})->Args({1})->Threads(1)->Threads(4)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace cincinnati
