// PollSightings (reports/poll_sightings.h) at the default capacity, full: the memory an
// id takes, and the time of Record, which every graph request of a policy engine with
// reports on makes.
//   build/bench/pipeline_bench --benchmark_filter=Sightings
// The sightings are filled once per process with three times their capacity of random
// ids polling once each (so they are full and have churned, as a flood leaves them),
// measured by the heap in use (mallinfo2) and the resident set before and after.
// BM_SightingsRecord/0: a known id polls again (a cluster every few minutes), each of
// half the table once, in random order; /1: a new id (its first poll: one id is evicted);
// /2: the same 64 known ids again and again, the work of a Record without cache misses.
//
// Poll receipts (reports/poll_receipt.h), what a poll that asks for one adds to the graph
// path, and what a report that carries one adds to the intake:
//   BM_ReceiptNext: a valid receipt continued (its MAC checked, a new one made);
//   BM_ReceiptProves: a receipt checked for a report;
//   BM_ReceiptHeaderAbsent: the one thing a poll without the header (the CVO's) pays,
//   looking for it among a graph request's usual headers.
//   build/bench/pipeline_bench --benchmark_filter=Receipt
// Measured on the 2-core machine: Next 0.52 us, Proves 0.25 us, the absent header 25 ns;
// against the ~14 us of CPU a graph answer costs, about 4 % more for a poll that asks
// for a receipt and 0.2 % for one that does not.
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "http_server/http_types.h"
#include "reports/poll_receipt.h"
#include "reports/poll_sightings.h"

namespace cincinnati::bench {
namespace {

constexpr int64_t kNow = 1637884800;  // 2021-11-26T00:00:00Z
constexpr uint64_t kCapacity = 1 << 20;  // the default of --reports.sightings

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The n-th of a fixed sequence of random (v4) UUIDs, made when needed, so that no list
// of ids is on the heap while the sightings are measured.
std::string NthId(uint64_t n) {
  const uint64_t a = SplitMix(2 * n), b = SplitMix(2 * n + 1);
  return fmt::format("{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}", a >> 32, (a >> 16) & 0xffff, a & 0xfff, b >> 52,
                     b & 0xffffffffffffULL);
}

size_t HeapInUse() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;  // small blocks in use and mmapped ones
}

size_t Resident() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

struct Filled {
  std::unique_ptr<server::PollSightings> seen;
  double heap_per_id = 0, resident_per_id = 0;
};

Filled& FilledSightings() {
  static Filled filled = [] {
    Filled f;
    malloc_trim(0);
    const size_t heap = HeapInUse(), resident = Resident();
    f.seen = std::make_unique<server::PollSightings>(kCapacity);
    for (uint64_t n = 0; n < 3 * kCapacity; ++n) f.seen->Record(NthId(n), "4.13.1", kNow);
    const auto ids = static_cast<double>(f.seen->size());
    f.heap_per_id = static_cast<double>(HeapInUse() - heap) / ids;
    f.resident_per_id = static_cast<double>(Resident() - resident) / ids;
    return f;
  }();
  return filled;
}

// Ids still known after the fill: the last half capacity recorded (each shard keeps its
// last ids, and no shard got more than its share of these), shuffled.
std::vector<std::string> KnownIds() {
  std::vector<std::string> ids;
  for (uint64_t n = 3 * kCapacity - kCapacity / 2; n < 3 * kCapacity; ++n) ids.push_back(NthId(n));
  std::shuffle(ids.begin(), ids.end(), std::mt19937_64(11));
  return ids;
}

// Ids never recorded: each run takes the next ones, so that a repetition's are new too.
std::vector<std::string> NewIds(size_t n) {
  static uint64_t next = 4 * kCapacity;
  std::vector<std::string> ids;
  for (; ids.size() < n; ++next) ids.push_back(NthId(next));
  return ids;
}

constexpr int64_t kRecords = 1 << 19;  // per run: as many ids as the list of known ones

void BM_SightingsRecord(benchmark::State& state) {
  Filled& filled = FilledSightings();
  std::vector<std::string> ids = state.range(0) == 1 ? NewIds(kRecords) : KnownIds();
  if (state.range(0) == 2) ids.resize(64);
  size_t i = 0;
  for (auto _ : state) filled.seen->Record(ids[i++ % ids.size()], "4.13.1", kNow + 180);
  state.counters["ids"] = static_cast<double>(filled.seen->size());
  state.counters["heap_bytes_per_id"] = filled.heap_per_id;
  state.counters["resident_bytes_per_id"] = filled.resident_per_id;
}
BENCHMARK(BM_SightingsRecord)->Arg(0)->Arg(1)->Arg(2)->Iterations(kRecords)->Unit(benchmark::kNanosecond);

// BM_SightingsSketch/N: PollSightings::SketchByVersion over N ids that polled within the
// window, at three versions: the pass a policy engine sharing its adoption samples makes
// once a period on the adoption history's thread; BM_SightingsCount/N is CountByVersion's
// over the same ids for comparison. "error": the sketches' summed estimates against N.
server::PollSightings& SightingsOf(int64_t n) {
  static std::map<int64_t, std::unique_ptr<server::PollSightings>> filled;
  std::unique_ptr<server::PollSightings>& seen = filled[n];
  if (!seen) {
    seen = std::make_unique<server::PollSightings>(static_cast<size_t>(n) * 2);
    const char* versions[] = {"4.13.1", "4.13.2", "4.14.0"};
    for (int64_t i = 0; i < n; ++i) seen->Record(NthId(static_cast<uint64_t>(i)), versions[i % 3], kNow);
  }
  return *seen;
}

void BM_SightingsSketch(benchmark::State& state) {
  server::PollSightings& seen = SightingsOf(state.range(0));
  double estimate = 0;
  for (auto _ : state) {
    estimate = 0;
    for (const auto& v : seen.SketchByVersion(kNow, 86400, server::DefaultSketchKey())) estimate += v.sketch.Estimate();
  }
  state.counters["ids"] = static_cast<double>(seen.size());
  state.counters["error"] = estimate / static_cast<double>(seen.size()) - 1;
}
BENCHMARK(BM_SightingsSketch)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

void BM_SightingsCount(benchmark::State& state) {
  server::PollSightings& seen = SightingsOf(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(seen.CountByVersion(kNow, 86400));
}
BENCHMARK(BM_SightingsCount)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond);
const server::PollReceipts& BenchReceipts() {
  static const server::PollReceipts receipts = *server::PollReceipts::FromKey(std::string(32, 'k'));
  return receipts;
}

void BM_ReceiptNext(benchmark::State& state) {
  const server::PollReceipts& r = BenchReceipts();
  const std::string id = NthId(1);
  std::string receipt = r.Next("", id, "4.13.1", kNow);
  int64_t now = kNow;
  for (auto _ : state) {
    receipt = r.Next(receipt, id, "4.13.1", now += 180);
    benchmark::DoNotOptimize(receipt.data());
  }
  state.SetLabel(receipt);
}
BENCHMARK(BM_ReceiptNext)->Unit(benchmark::kNanosecond);

void BM_ReceiptProves(benchmark::State& state) {
  const server::PollReceipts& r = BenchReceipts();
  const std::string id = NthId(1);
  std::string receipt;
  for (int i = 0; i < 3; ++i) receipt = r.Next(receipt, id, "4.13.1", kNow + 180 * i);
  bool proven = false;
  for (auto _ : state) {
    proven = r.Proves(receipt, id, "4.13.1", kNow + 3600, 86400, 1800, 3);
    benchmark::DoNotOptimize(proven);
  }
  if (!proven) state.SkipWithError("the receipt proves nothing");
}
BENCHMARK(BM_ReceiptProves)->Unit(benchmark::kNanosecond);

void BM_ReceiptHeaderAbsent(benchmark::State& state) {
  http_server::Request request;
  for (const char* name : {"Host", "User-Agent", "Accept", "Accept-Encoding", "X-Forwarded-For", "X-Request-Id"}) {
    request.headers[name] = "value";
  }
  for (auto _ : state) benchmark::DoNotOptimize(request.Header(server::kPollReceiptHeader));
}
BENCHMARK(BM_ReceiptHeaderAbsent)->Unit(benchmark::kNanosecond);

}  // namespace
}  // namespace cincinnati::bench
