// PolicyEngineOptions: what a policy engine (policy_engine_service.h) is told at start,
// read by each of its parts (the upstream feed, the answer service, the cluster
// lookups, the report edge checks) for as long as the service lives.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/answer_signature.h"
#include "directory/cluster_directory.h"
#include "env/clock.h"
#include "policy_engine/upstream_state.h"
#include "service/http_names.h"

namespace cincinnati::server {

class ReportIntake;
class AnswerSigner;
class AdoptionStore;

// Where the graph comes from: empty `url`, the in-process graph builder; else an HTTP
// graph builder or policy engine, fetched on a pool of `fetch_threads`.
struct PolicyEngineUpstream {
  std::string url;  // empty: in-process upstream
  UpstreamKind kind = UpstreamKind::kAuto;
  std::chrono::milliseconds timeout{30000};
  size_t max_body_bytes = 64u << 20;
  size_t fetch_threads = 4;
  // The upstream's signed answers are checked against these keys (signing/upstream_trust.h);
  // nullopt: taken as they come.
  std::optional<TrustedKeys> keys;
  bool require_signature = false;
};

// How long and how much is kept: the upstream's graph and forwarded answers.
struct PolicyEngineCache {
  std::chrono::milliseconds ttl{60000};
  size_t max_queries = 4096;  // forwarded queries
  size_t max_view_bytes = 256u << 20;  // views computed on demand (service/view_cache.h)
  size_t max_bytes = 256u << 20;  // forwarded answers' bodies
  std::chrono::milliseconds max_stale{std::chrono::hours(24)};  // forwarded answers kept past a failed refresh
  double max_fetches_per_second = 50;  // forwarded queries
};

// The cluster directory (hotfix entitlements) and how it is asked.
struct PolicyEngineDirectory {
  std::shared_ptr<directory::ClusterDirectory> client;  // none: nobody sees hotfixes
  size_t threads = 8;
  size_t max_pending_lookups = 1024;  // beyond: fail open at once
  std::chrono::milliseconds log_interval{60000};
};

struct PolicyEngineOptions {
  std::string path_prefix;  // normalized
  bool web_ui = false;      // the graph page at / and {prefix}/v1/ui/... (ui_routes.cc)
  std::string signatures_dir;  // served on the main listener when set (service/signature_files.h)
  std::vector<std::string> mandatory_client_parameters;
  PolicyEngineUpstream upstream;
  PolicyEngineCache cache;
  // The wall clock: phased rollouts, signatures' times, graph generations, report times.
  std::shared_ptr<env::Clock> clock = env::SharedRealClock();
  PolicyEngineDirectory directory;
  // Update reports: agents' POST {prefix}/v1/reports, and the polls it must
  // see (reports/report_intake.h). Null: the path is not served.
  std::shared_ptr<ReportIntake> reports;
  // Where the adoption curves are shared with the other engines (adoption_store.h). Null:
  // this engine counts the polls it saw.
  std::shared_ptr<AdoptionStore> adoption_store;
  // Signed answers (signing/answer_signer.h): every answer from the shared graph carries
  // Cincinnati-Signature and Cincinnati-Graph-Generation. Null: unsigned.
  std::shared_ptr<AnswerSigner> signer;
  // Routes tried before the policy engine's own (serve: the brakes' API, reports/report_routes.h).
  std::function<std::optional<Response>(const Request&)> extra_routes;
};

}  // namespace cincinnati::server
