// ForwardedAnswers: a policy engine's answers to the queries it forwards to an upstream
// policy engine, one entry per normalized query.
//
//  - An answer younger than `ttl` is served from memory.
//  - An older one is still served at once while a single refresh runs in the
//    background; identical queries share one fetch. A query with no answer yet waits
//    for its fetch.
//  - Stale-if-error: a refresh that fails keeps the last good answer, served until it
//    is `max_stale` old and counted in `stale`; past that the failure is served. An
//    error document the upstream answers with (4xx) is an answer, not a failure.
//  - Bounded: at most `max_entries` queries and `max_bytes` of answer bodies; the
//    least recently used entry goes first (never one whose fetch is in flight).
//  - At most `max_fetches_per_second` fetches start per second (a token bucket with a
//    one-second burst), so clients that vary `id` cannot churn the upstream. A query
//    over the budget gets its last good answer, else the answer to the same query
//    without `id` (what a cluster without an id sees: never more than its own), else a
//    failed_upstream_fetch error; each is counted in `throttled`.
// Thread-safe. `fetch` runs on the given pool's threads and must not throw (the
// caller guards it); `done` is called exactly once, on the caller's thread or a pool thread.
#pragma once

#include <chrono>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/error_document.h"
#include "core/transform.h"
#include "env/clock.h"
#include "http_server/metrics.h"
#include "service/http_names.h"
#include "service/view_cache.h"
#include "signing/answer_signer.h"

namespace boost::asio {
class thread_pool;
}

namespace cincinnati::server {

struct ForwardedQuery {
  std::string key;         // the normalized query string sent upstream
  std::string without_id;  // the same without `id`; empty when the query has no id
  Parameters parameters;   // what `key` encodes
};

// The query forwarded for a client's parameters: the ones a policy engine reads (arch,
// channel, id, version) and the `mandatory` ones; forwarding only these keeps clients
// from multiplying upstream fetches with junk.
ForwardedQuery ForwardedQueryOf(const Parameters& params, const std::vector<std::string>& mandatory);

// What one fetch found (exactly one member set), and what a client is answered.
struct ForwardedAnswer {
  std::shared_ptr<const View> view;     // a good answer
  std::optional<ErrorDocument> error;   // the upstream's error document, or why there is no answer
  AnswerSource source = {};             // what its signature vouches for (signing/answer_signer.h)
};

struct ForwardedAnswersOptions {
  std::chrono::milliseconds ttl{60000};
  std::chrono::milliseconds max_stale{std::chrono::hours(24)};
  size_t max_entries = 4096;
  size_t max_bytes = 256u << 20;
  double max_fetches_per_second = 50;
  env::Clock* clock = &env::RealClock();  // TTL, staleness and the token bucket
  // Over the budget, answer with the same query without `id` (a client's view); false:
  // failed_upstream_fetch instead (a report's check must not judge by another view).
  bool fallback_without_id = true;
};

class ForwardedAnswers {
 public:
  // `failed` tells a failure (stale-if-error applies) from an upstream error answer.
  using Fetch = std::function<ForwardedAnswer(const ForwardedQuery& query, bool& failed)>;
  using Done = std::function<void(const ForwardedAnswer&)>;
  using Time = env::Clock::SteadyTime;

  ForwardedAnswers(ForwardedAnswersOptions options, Fetch fetch, boost::asio::thread_pool& pool, Counter& stale,
                   Counter& throttled);
  ~ForwardedAnswers();

  void Get(const ForwardedQuery& query, Done done);
  size_t size() const;
  size_t bytes() const;

 private:
  struct Entry;
  Entry& Touch(const std::string& key);
  bool TakeToken(Time now);
  // The answer `e` gives now, if it has one to give; counts stale answers.
  std::optional<ForwardedAnswer> Serve(const Entry& e, Time now, bool may_be_old);
  void Finish(const ForwardedQuery& query, const ForwardedAnswer& answer, bool failed);
  void Evict();

  ForwardedAnswersOptions options_;
  Fetch fetch_;
  boost::asio::thread_pool& pool_;
  Counter& stale_;
  Counter& throttled_;
  mutable std::mutex mu_;
  std::list<std::string> lru_;  // most recent first
  std::unordered_map<std::string, std::unique_ptr<Entry>> entries_;
  size_t bytes_ = 0;
  double tokens_ = 0;
  Time refilled_{};
};

}  // namespace cincinnati::server
