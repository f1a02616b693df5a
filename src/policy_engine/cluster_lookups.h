// ClusterLookups: a policy engine's questions to the cluster directory (who owns a
// cluster, so which hotfixes it may see; directory/cluster_directory.h).
//
// Only a request whose answer can depend on it asks: one with an `id`, in a channel
// where the graph has a hotfix (LookupFor). Quick() answers when the directory can
// without waiting (its cache, a failure) or when too many lookups are in flight
// (`directory.max_pending_lookups`: failed at once, so the general graph is served); Later() waits
// for the directory on a pool of `directory.threads`, off the I/O threads. Every
// directory answer is counted (lookups, cache hits, failures); a failure serves the
// general graph and is logged at most once per `directory.log_interval`, with the
// count since the last line. Metrics are registered in the service's one Registry.
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/transform.h"
#include "directory/cluster_directory.h"
#include "http_server/metrics.h"
#include "policy/hotfix_filter.h"
#include "service/http_names.h"

namespace boost::asio {
class thread_pool;
}

namespace cincinnati::server {

struct PolicyEngineOptions;

class ClusterLookups {
 public:
  // `options` outlives it.
  ClusterLookups(const PolicyEngineOptions& options, Registry& metrics);
  ~ClusterLookups();

  // Whether there is a directory to ask.
  bool enabled() const;
  // The cluster id to look up for a graph request, when its answer can depend on it.
  std::optional<std::string> LookupFor(const Parameters& params, const policy::HotfixIndex* hotfixes) const;
  // The directory's answer for `id` when it comes without waiting, or a failure when too
  // many lookups are in flight; nullopt: ask Later.
  std::optional<directory::DirectoryAnswer> Quick(const std::string& id) const;
  // Asks the directory on the lookup pool, then hands answer(its record) to `respond`, or
  // on_error(why) when `answer` threw.
  using ClusterAnswer = std::function<Response(const std::optional<directory::DirectoryAnswer>&)>;
  void Later(std::string id, std::function<void(Response)> respond, ClusterAnswer answer,
             std::function<Response(const Status&)> on_error);
  // Counts a directory answer (with the rate-limited log line) and says whether it found
  // the cluster.
  bool Record(const directory::DirectoryAnswer& answer);
  // Records a directory answer and returns the cluster's entitlements in the request's channel.
  ClusterEntitlements Entitle(const directory::DirectoryAnswer& answer, const policy::HotfixIndex& hotfixes,
                              const Parameters& params);
  // Lookups in flight end.
  void Stop();

 private:
  const PolicyEngineOptions& options_;
  Counter& lookups_;
  Counter& cache_hits_;
  Counter& failures_;
  std::unique_ptr<boost::asio::thread_pool> pool_;  // when a directory is set
  std::atomic<size_t> pending_{0};
  std::atomic<int64_t> last_failure_log_ms_{INT64_MIN};
  std::atomic<uint64_t> failures_since_log_{0};
};

}  // namespace cincinnati::server
