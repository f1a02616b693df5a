// Per-cluster answers of a real-size phased channel: the policy chain run and its
// answer written (and compressed) per request, against the answer assembled from pieces
// (service/answer_pieces.h), for a fresh random cluster id each time.
//   CINCINNATI_BENCH_PHASED_2021=DIR build/bench/pipeline_bench --benchmark_filter=PerCluster
// where DIR holds graph-data/ (python3 bench/phased_2021.py FIXTURE DIR/graph-data) and
// releases/ (python3 bench/real_releases.py DIR/graph-data DIR/releases).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>

#include <fmt/format.h>

#include "builder/pipeline.h"
#include "core/graph_json.h"
#include "core/internal_metadata.h"
#include "http_server/gzip.h"
#include "policy/arch_filter.h"
#include "policy/channel_filter.h"
#include "policy/phased_rollout.h"
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "http_server/response_head.h"
#include "policy_engine/adoption_history.h"
#include "signing/answer_signer.h"
#include "service/responses.h"
#include "reports/poll_sightings.h"
#include "service/view_cache.h"

namespace cincinnati::bench {
namespace {

constexpr int64_t kNow = 1637884800;  // 2021-11-26T00:00:00Z, as bench/http_vs_nginx.sh's percluster case

const Graph* PhasedGraph2021(benchmark::State& state) {
  static const Result<Graph> graph = []() -> Result<Graph> {
    const char* dir = std::getenv("CINCINNATI_BENCH_PHASED_2021");
    if (dir == nullptr) return Status::InvalidArgument("set CINCINNATI_BENCH_PHASED_2021 (see answer_bench.cc)");
    LocalBuildOptions options;
    options.releases = std::filesystem::path(dir) / "releases";
    options.graph_data = std::filesystem::path(dir) / "graph-data";
    TransformContext context;
    CINCINNATI_ASSIGN_OR_RETURN(Graph built, BuildLocalGraph(options, context));
    return StripExplanationKeys(built);  // what the policy engine serves from
  }();
  if (!graph.ok()) {
    state.SkipWithError(graph.status().message().c_str());
    return nullptr;
  }
  return &*graph;
}

TransformChain Chain() {
  TransformChain chain;
  chain.push_back(std::make_unique<policy::ChannelFilter>());
  chain.push_back(std::make_unique<policy::ArchFilter>());
  chain.push_back(std::make_unique<policy::PhasedRollout>(env::ManualClock::AtUnixSeconds(kNow)));
  return chain;
}

std::vector<std::string> RandomIds(size_t n) {
  std::mt19937_64 rng(29);
  std::vector<std::string> ids;
  for (size_t i = 0; i < n; ++i) {
    uint64_t a = rng(), b = rng();
    ids.push_back(fmt::format("{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}", a >> 32, (a >> 16) & 0xffff, a & 0xfff,
                              b >> 52, b & 0xffffffffffffULL));
  }
  return ids;
}

// range(0): 1 for gzip. What the policy engine did before pieces for an answer it had
// not seen: the per-request step on the cached channel view, written and compressed.
void BM_PerClusterAnswer_Chain(benchmark::State& state) {
  const Graph* graph = PhasedGraph2021(state);
  if (!graph) return;
  TransformChain chain = Chain();
  TransformContext prefix_context;
  prefix_context.parameters = {{"channel", "stable-4.8"}, {"arch", "amd64"}};
  auto prefix = RunStepsOn(chain, 0, 2, *graph, prefix_context);
  const std::vector<std::string> ids = RandomIds(4096);
  size_t i = 0, bytes = 0;
  for (auto _ : state) {
    TransformContext context;
    context.parameters = {{"channel", "stable-4.8"}, {"arch", "amd64"}, {"id", ids[i++ % ids.size()]}};
    auto view = RunStepsOn(chain, 2, 3, *prefix, context);
    std::string body = WriteGraphJson(*view, {.schema_version = 1});
    if (state.range(0)) body = http_server::GzipCompress(body);
    bytes = body.size();
    benchmark::DoNotOptimize(body);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_PerClusterAnswer_Chain)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

// The same answers from the view cache: assembled from the span's pieces.
void BM_PerClusterAnswer_Pieces(benchmark::State& state) {
  const Graph* graph = PhasedGraph2021(state);
  if (!graph) return;
  TransformChain chain = Chain();
  server::ViewCache cache(chain, std::make_shared<const Graph>(*graph));
  const std::vector<std::string> ids = RandomIds(4096);
  size_t i = 0, bytes = 0;
  for (auto _ : state) {
    Parameters params{{"channel", "stable-4.8"}, {"arch", "amd64"}, {"id", ids[i++ % ids.size()]}};
    auto view = cache.Get(params);
    // What the server sends: the part every answer shares, and this one's.
    server::View::Parts parts = state.range(0) ? (*view)->GzipParts() : (*view)->BodyParts();
    bytes = parts.head->size() + (parts.tail ? parts.tail->size() : 0);
    benchmark::DoNotOptimize(parts);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["assembled"] = static_cast<double>(cache.assembled());
}
BENCHMARK(BM_PerClusterAnswer_Pieces)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

// One fresh Ed25519 signing key (signed runs), or none.
std::vector<std::shared_ptr<const SigningKey>> FreshSigningKeys() {
  EVP_PKEY* pkey = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, pkey, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::vector<std::shared_ptr<const SigningKey>> keys{SigningKey::FromPem(std::string_view(data, static_cast<size_t>(n))).value()};
  BIO_free(bio);
  EVP_PKEY_free(pkey);
  return keys;
}
std::vector<std::shared_ptr<const SigningKey>> NoKeys() { return {}; }

// range(0): 1 for signed answers. The whole of a request's work in the policy
// engine after the query is parsed, as the server does it for a CVO (gzip, its own id,
// its version): the answer from pieces, the response's headers, the head lines from the
// signer (signed or the generation lines alone) and the response head written;
// head_ns: the median time of the lookup and the head written alone.
void BM_AnswerResponse(benchmark::State& state) {
  const Graph* graph = PhasedGraph2021(state);
  if (!graph) return;
  TransformChain chain = Chain();
  server::ViewCache cache(chain, std::make_shared<const Graph>(*graph));
  const std::vector<std::shared_ptr<const SigningKey>> keys = state.range(0) ? FreshSigningKeys() : NoKeys();
  server::AnswerSigner signer(keys, std::chrono::seconds(3600));
  const std::vector<std::string> ids = RandomIds(4096);
  http_server::Request request;
  request.headers["Accept-Encoding"] = "gzip";
  const std::string content_type = "application/json";
  std::string head;
  // The time per request from the signer's lookup to the head written (what signing
  // changes), of the last 65,536 requests: its median is what a request spends there,
  // whatever the machine's other work preempted.
  std::vector<std::chrono::nanoseconds> head_times(size_t{1} << 16);
  size_t heads = 0;
  auto respond = [&](const std::string& id) {
    Parameters params{{"channel", "stable-4.8"}, {"arch", "amd64"}, {"version", "4.7.37"}, {"id", id}};
    auto view = cache.Get(params);
    http_server::Response response = server::ViewResponse(**view, request, content_type);
    const auto start = std::chrono::steady_clock::now();
    response.head_lines = signer.HeadLines(**view, server::QueryScope(params), {1637884800000, kNow, 0, false}, kNow).text;
    head.clear();
    http_server::AppendResponseHead(head, response, 11, response.body->size() + (response.body_tail ? response.body_tail->size() : 0), true);
    head_times[heads++ % head_times.size()] = std::chrono::steady_clock::now() - start;
    benchmark::DoNotOptimize(head);
  };
  // Every distinct answer once, untimed: a service signs each once, then serves it for hours.
  for (const std::string& id : ids) respond(id);
  size_t i = 0;
  heads = 0;
  for (auto _ : state) respond(ids[i++ % ids.size()]);
  state.counters["head_bytes"] = static_cast<double>(head.size());
  // As the server meets it (its memory as the request's other work left the caches),
  // clock reads included.
  head_times.resize(std::min(heads, head_times.size()));
  std::nth_element(head_times.begin(), head_times.begin() + head_times.size() / 2, head_times.end());
  state.counters["head_ns"] = head_times.empty() ? 0 : static_cast<double>(head_times[head_times.size() / 2].count());
  state.counters["signed"] = static_cast<double>(signer.signed_count());
}
BENCHMARK(BM_AnswerResponse)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

// range(0): 1 for signed answers. The signer's part of a request alone (what
// BM_AnswerResponse spends on the head lines, too small to see there among the
// machine's noise): the lines for a fresh random cluster's answer, every distinct
// answer signed before timing; the answers themselves are made before timing too.
void BM_HeadLines(benchmark::State& state) {
  const Graph* graph = PhasedGraph2021(state);
  if (!graph) return;
  TransformChain chain = Chain();
  server::ViewCache cache(chain, std::make_shared<const Graph>(*graph));
  const std::vector<std::shared_ptr<const SigningKey>> keys = state.range(0) ? FreshSigningKeys() : NoKeys();
  server::AnswerSigner signer(keys, std::chrono::seconds(3600));
  std::vector<std::pair<Parameters, std::shared_ptr<const server::View>>> answers;
  for (const std::string& id : RandomIds(4096)) {
    Parameters params{{"channel", "stable-4.8"}, {"arch", "amd64"}, {"version", "4.7.37"}, {"id", id}};
    auto view = cache.Get(params);
    answers.emplace_back(std::move(params), *view);
  }
  auto lines = [&](size_t i) {
    const auto& [params, view] = answers[i % answers.size()];
    return signer.HeadLines(*view, server::QueryScope(params), {1637884800000, kNow, 0, false}, kNow).text;
  };
  for (size_t i = 0; i < answers.size(); ++i) lines(i);
  size_t i = 0, bytes = 0;
  for (auto _ : state) {
    auto text = lines(i++);
    bytes = text->size();
    benchmark::DoNotOptimize(text);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["signed"] = static_cast<double>(signer.signed_count());
}
BENCHMARK(BM_HeadLines)->Arg(0)->Arg(1);

// One adoption sample (policy_engine/adoption_history.h): a pass over the sightings of N
// polling clusters spread over 12 versions, as the poll that finds it due takes it.
void BM_AdoptionSample(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  server::PollSightings seen(n + n / 4);
  std::mt19937_64 random(7);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t a = random(), b = random();
    const std::string id = fmt::format("{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}", a >> 32, (a >> 16) & 0xffff, a & 0xfff, b >> 52,
                                       b & 0xffffffffffffULL);
    seen.Record(id, fmt::format("4.13.{}", i % 12), kNow);
  }
  for (auto _ : state) {
    server::AdoptionHistory history;
    history.MaybeSample(seen, kNow);
    benchmark::DoNotOptimize(history);
  }
  state.counters["ids"] = static_cast<double>(seen.size());
}
BENCHMARK(BM_AdoptionSample)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace cincinnati::bench
