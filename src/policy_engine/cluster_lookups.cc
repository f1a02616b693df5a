#include "policy_engine/cluster_lookups.h"

#include <algorithm>
#include <chrono>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <spdlog/spdlog.h>

#include "core/guard.h"
#include "env/clock.h"
#include "policy_engine/policy_engine_options.h"

namespace cincinnati::server {

namespace {

// Real time, for log intervals: the engine's clock may stand still (--testing.now).
int64_t NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(env::RealClock().Steady().time_since_epoch()).count();
}

}  // namespace

ClusterLookups::ClusterLookups(const PolicyEngineOptions& options, Registry& metrics)
    : options_(options),
      lookups_(metrics.AddCounter("cluster_directory_lookups_total", "Cluster directory lookups (cache hits included)").Get()),
      cache_hits_(metrics.AddCounter("cluster_directory_cache_hits_total",
                                     "Cluster directory lookups answered from the cache").Get()),
      failures_(metrics.AddCounter("cluster_directory_failures_total",
                                   "Failed cluster directory lookups, answered with the general graph").Get()) {
  if (options_.directory.client) pool_ = std::make_unique<boost::asio::thread_pool>(std::max<size_t>(1, options_.directory.threads));
}

ClusterLookups::~ClusterLookups() { Stop(); }

void ClusterLookups::Stop() {
  if (pool_) pool_->join();
}

bool ClusterLookups::enabled() const { return options_.directory.client != nullptr; }

std::optional<std::string> ClusterLookups::LookupFor(const Parameters& params, const policy::HotfixIndex* hotfixes) const {
  if (!options_.directory.client || !hotfixes) return std::nullopt;
  auto id = params.find("id");
  auto channel = params.find("channel");
  if (id == params.end() || id->second.empty() || channel == params.end()) return std::nullopt;
  for (const HotfixRule& rule : hotfixes->rules()) {
    if (rule.InChannel(channel->second)) return id->second;
  }
  return std::nullopt;  // no hotfix in this channel: the answer is everyone's
}

std::optional<directory::DirectoryAnswer> ClusterLookups::Quick(const std::string& id) const {
  std::optional<directory::DirectoryAnswer> quick = options_.directory.client->Quick(id);
  if (!quick && pending_.load() >= options_.directory.max_pending_lookups) {
    quick = directory::DirectoryAnswer::Failed("too many cluster directory lookups in flight");
  }
  return quick;
}

void ClusterLookups::Later(std::string id, std::function<void(Response)> respond, ClusterAnswer answer,
                           std::function<Response(const Status&)> on_error) {
  ++pending_;
  boost::asio::post(*pool_, [this, id = std::move(id), respond = std::move(respond), answer = std::move(answer),
                             on_error = std::move(on_error)] {
    auto answered = Guarded("cluster directory lookup",
                            [&]() -> Result<Response> { return answer(options_.directory.client->Lookup(id)); });
    --pending_;
    respond(answered.ok() ? std::move(answered).value() : on_error(answered.status()));
  });
}

ClusterEntitlements ClusterLookups::Entitle(const directory::DirectoryAnswer& answer, const policy::HotfixIndex& hotfixes,
                                            const Parameters& params) {
  if (!Record(answer)) return {};
  auto channel = params.find("channel");
  ClusterEntitlements entitlements;
  entitlements.hotfixes = hotfixes.Entitled(answer.cluster, channel == params.end() ? "" : channel->second);
  return entitlements;
}

bool ClusterLookups::Record(const directory::DirectoryAnswer& answer) {
  lookups_.Increment();
  if (answer.from_cache) cache_hits_.Increment();
  if (answer.kind == directory::DirectoryAnswer::Kind::kFailed) {
    failures_.Increment();
    // Once per interval, with the count since the last line: a dead directory must not
    // flood the log at the request rate.
    uint64_t failures = failures_since_log_.fetch_add(1) + 1;
    int64_t now = NowMillis();
    int64_t last = last_failure_log_ms_.load();
    if ((last == INT64_MIN || now - last >= options_.directory.log_interval.count()) &&
        last_failure_log_ms_.compare_exchange_strong(last, now)) {
      failures = failures_since_log_.exchange(0);
      spdlog::warn("policy engine: cluster directory ({}) lookup failed, serving the general graph ({} failure{} "
                   "since the last report): {}",
                   options_.directory.client->kind(), failures, failures == 1 ? "" : "s", answer.error);
    }
    return false;
  }
  return answer.kind == directory::DirectoryAnswer::Kind::kFound;
}

}  // namespace cincinnati::server
