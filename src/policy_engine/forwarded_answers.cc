#include "policy_engine/forwarded_answers.h"

#include <algorithm>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

namespace cincinnati::server {

namespace {

// The parameters a policy engine reads (the reference's and ours).
constexpr std::string_view kForwardedParameters[] = {"arch", "channel", "id", "version"};

}  // namespace

ForwardedQuery ForwardedQueryOf(const Parameters& params, const std::vector<std::string>& mandatory) {
  ForwardedQuery q;
  for (const auto& [key, value] : params) {
    bool known = std::find(std::begin(kForwardedParameters), std::end(kForwardedParameters), key) !=
                     std::end(kForwardedParameters) ||
                 std::find(mandatory.begin(), mandatory.end(), key) != mandatory.end();
    if (known) q.parameters.emplace(key, value);
  }
  q.key = EncodeQuery(q.parameters);
  if (q.parameters.count("id")) {
    Parameters general = q.parameters;
    general.erase("id");
    q.without_id = EncodeQuery(general);
  }
  return q;
}

struct ForwardedAnswers::Entry {
  std::list<std::string>::iterator lru;
  bool answered = false;  // a fetch has completed
  Time answered_at;
  std::shared_ptr<const View> good;     // the last good answer
  Time good_at;
  AnswerSource good_source;             // its ForwardedAnswer's source
  bool failing = false;                 // the last fetch failed
  std::optional<ErrorDocument> error;   // the last answer was an error document, or a failure
  bool in_flight = false;
  std::vector<Done> waiters;
  size_t bytes = 0;
};

ForwardedAnswers::ForwardedAnswers(ForwardedAnswersOptions options, Fetch fetch, boost::asio::thread_pool& pool,
                                   Counter& stale, Counter& throttled)
    : options_(options), fetch_(std::move(fetch)), pool_(pool), stale_(stale), throttled_(throttled) {
  tokens_ = std::max(1.0, options_.max_fetches_per_second);
}

ForwardedAnswers::~ForwardedAnswers() = default;

ForwardedAnswers::Entry& ForwardedAnswers::Touch(const std::string& key) {
  auto [it, inserted] = entries_.try_emplace(key);
  if (inserted) {
    it->second = std::make_unique<Entry>();
    lru_.push_front(key);
    it->second->lru = lru_.begin();
    it->second->bytes = key.size();
    bytes_ += key.size();
  } else {
    lru_.splice(lru_.begin(), lru_, it->second->lru);
  }
  return *it->second;
}

bool ForwardedAnswers::TakeToken(Time now) {
  const double rate = options_.max_fetches_per_second;
  if (rate <= 0) return true;  // unlimited
  if (refilled_ != Time{}) {
    tokens_ = std::min(std::max(1.0, rate), tokens_ + std::chrono::duration<double>(now - refilled_).count() * rate);
  }
  refilled_ = now;
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

std::optional<ForwardedAnswer> ForwardedAnswers::Serve(const Entry& e, Time now, bool may_be_old) {
  if (!e.answered) return std::nullopt;
  const bool fresh = now - e.answered_at < options_.ttl;
  if (!fresh && !may_be_old) return std::nullopt;
  if (e.good && (!e.failing || now - e.good_at <= options_.max_stale)) {
    if (e.failing) stale_.Increment();
    return ForwardedAnswer{e.good, std::nullopt, e.good_source};
  }
  if (e.error && fresh) return ForwardedAnswer{nullptr, e.error};
  return std::nullopt;
}

void ForwardedAnswers::Get(const ForwardedQuery& query, Done done) {
  std::optional<ForwardedAnswer> answer;
  bool start = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Time now = options_.clock->Steady();
    Entry& e = Touch(query.key);
    answer = Serve(e, now, /*may_be_old=*/false);
    if (!answer) {
      // Needs a refresh: one fetch per query at a time, within the budget.
      if (!e.in_flight && TakeToken(now)) start = e.in_flight = true;
      const bool throttled = !e.in_flight;
      if (throttled) throttled_.Increment();
      answer = Serve(e, now, /*may_be_old=*/true);
      if (!answer && !throttled) {
        e.waiters.push_back(std::move(done));
      } else if (!answer) {
        if (auto general = entries_.find(query.without_id);
            options_.fallback_without_id && !query.without_id.empty() && general != entries_.end()) {
          const Entry& g = *general->second;
          if (g.good && now - g.good_at <= options_.max_stale) answer = ForwardedAnswer{g.good, std::nullopt, g.good_source};
        }
        if (!answer) {
          answer = ForwardedAnswer{nullptr, ErrorDocument::Of("failed_upstream_fetch",
                                                              "too many upstream fetches at once; try again later")};
        }
      }
    }
    Evict();
  }
  if (start) {
    boost::asio::post(pool_, [this, query] {
      bool failed = false;
      ForwardedAnswer fetched = fetch_(query, failed);
      Finish(query, fetched, failed);
    });
  }
  if (answer) done(*answer);
}

void ForwardedAnswers::Finish(const ForwardedQuery& query, const ForwardedAnswer& fetched, bool failed) {
  std::vector<Done> waiters;
  ForwardedAnswer answer;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Time now = options_.clock->Steady();
    Entry& e = *entries_.at(query.key);  // never evicted while in flight
    bytes_ -= e.bytes;
    if (failed) {
      e.failing = true;
      e.error = fetched.error;
    } else if (fetched.view) {
      e.good = fetched.view;
      e.good_at = now;
      e.good_source = fetched.source;
      e.failing = false;
      e.error.reset();
    } else {
      e.good.reset();  // the upstream now answers this query with an error
      e.failing = false;
      e.error = fetched.error;
    }
    e.answered = true;
    e.answered_at = now;
    e.in_flight = false;
    e.bytes = query.key.size() + (e.good ? e.good->body()->size() : 0) + (e.error ? e.error->value.size() : 0);
    bytes_ += e.bytes;
    waiters.swap(e.waiters);
    if (!waiters.empty()) {
      answer = Serve(e, now, /*may_be_old=*/true).value_or(
          ForwardedAnswer{nullptr, e.error.value_or(ErrorDocument::Of("failed_upstream_fetch", "no answer"))});
    }
    Evict();
  }
  for (Done& w : waiters) w(answer);
}

void ForwardedAnswers::Evict() {
  auto it = lru_.end();
  while ((entries_.size() > options_.max_entries || bytes_ > options_.max_bytes) && it != lru_.begin()) {
    --it;
    auto entry = entries_.find(*it);
    if (entry->second->in_flight || !entry->second->waiters.empty()) continue;
    bytes_ -= entry->second->bytes;
    entries_.erase(entry);
    it = lru_.erase(it);
  }
}

size_t ForwardedAnswers::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

size_t ForwardedAnswers::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

}  // namespace cincinnati::server
