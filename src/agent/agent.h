// Agent: one cluster's update agent, the cluster-version operator's role (the CVO's
// pkg/cvo sync loop): it owns the ClusterVersion, polls the update service, lists
// available and conditional updates, optionally picks the newest one, waits for a
// desired update that differs from the running release, and carries it out
// (UpdateRunner: verify, download, check, apply, wait for the components).
//
// LoopState is derived each pass from the spec and the runner's result (Transition), as
// the CVO derives its state each sync; never read to decide, it is written with the
// ClusterVersion (an annotation) for people: Retrieving (no valid desired update that
// differs from the running release), Invalid (condition Invalid says why),
// UpdateRequested (the runner steps it), Updating (the runner says it is under way).
// What persists and decides is the runner's UpdateProgress, whose phases move only
// along the table of update_phases.h.
//
// Two loops run apart (Run), so that neither waits on the other's network:
//   - retrievals: poll the update service (the retriever decides whether that means the
//     network), evaluate risks, compute Upgradeable from the components, and write
//     RetrievedUpdates, the update lists and Upgradeable;
//   - updates: derive the LoopState, step the update (update_progress.h has its own
//     persisted phases) and write Available, Failing, Progressing,
//     ReleaseAccepted, Invalid, the history and status.desired.
// Each loop owns its conditions, and computes them on a copy that replaces the old
// ones at once, so a reader never sees a condition flap between two passes. A fetch is
// bounded in time and size (update_retriever.h) and in what it leaves in the state
// (available_updates.h: KeptLimits), and is cancelled by a stop, as are downloads and
// signature searches: Run returns within about a second of its stop.
//
// Update reports, when options.reports.url is set: once an update attempt
// has ended (update_runner.h), the update loop queues its report in the state
// directory (report_outbox.h) and only then marks the attempt reported, then wakes the
// retrieval loop, which sends what is due after each retrieval pass. A report that
// cannot be queued (a full disk) holds nothing back: it is queued at a later pass.
// With reports on, polls also ask for poll receipts (poll_receipt_book.h), and each
// report carries the receipt of its from-version, so that any replica of the service
// can tell it polled there.
//
// Signed answers, when options.answer_keys is set: the retriever checks each
// answer's signature (answer_trust.h) before reading it; the upstreams that signed
// and their newest graph generation taken are kept in the store, read back when the
// agent opens. What the retrieved lists answer (ListsOrigin) is saved as annotations of
// the stored ClusterVersion, with the lists.
//
// Opening never fails for a state file that cannot be read: a ClusterVersion is
// salvaged part by part (state_salvage.h), an update progress that cannot be read is
// set aside and the update starts over (every step is idempotent), and what was
// dropped is logged.
//
// Thread-safety: ClusterVersionJson, PatchSpec, PutComponent and friends may be called
// from any thread (API handlers); RunPass and Run from one thread. The lock is not held
// during network I/O. Every write goes to the store before it is acknowledged, so a
// kill -9 at any moment loses nothing that was acknowledged. Never throws.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>

#include "agent/answer_trust.h"
#include "agent/cluster_version.h"
#include "agent/component_objects.h"
#include "agent/installed_release.h"
#include "agent/object_store.h"
#include "agent/promql.h"
#include "agent/report_outbox.h"
#include "agent/storage_health.h"
#include "agent/update_retriever.h"
#include "agent/update_runner.h"
#include "env/clock.h"
#include "kube/json_value.h"

namespace cincinnati::agent {

using kube::JsonValue;
using kube::JsonArray;

enum class LoopState { kRetrieving, kInvalid, kUpdateRequested, kUpdating };
std::string_view LoopStateName(LoopState state);

struct AgentOptions {
  InstalledReleaseSource release;       // read on an empty state directory only
  std::string update_service;           // overrides spec.upstream when set (the CVO's --update-service)
  std::string initial_channel;          // spec.channel of a new state; else the release's first channel
  std::string initial_upstream = std::string(kDefaultUpstream);
  std::string arch;                     // "amd64", ...; empty: this machine's
  std::string upstream_ca_dir;
  PrometheusSettings prometheus;        // url empty: PromQL risks cannot be evaluated
  RuleCacheSettings risk_cache;         // the CVO's throttling of PromQL queries
  bool auto_update = false;             // the CVO's --enable-auto-update
  std::chrono::milliseconds poll_interval{0};  // 0: drawn from [2 min, 4 min) once
  std::chrono::milliseconds fetch_timeout = kDefaultFetchTimeout;  // one graph request
  size_t max_answer_bytes = kDefaultMaxAnswerBytes;                 // one graph answer
  KeptLimits kept;                      // what is kept of an answer
  bool hypershift = false;              // the CVO's --hypershift: `_id=""` in risks' PromQL names this cluster
  // Signed answers (answer_trust.h): the trusted keys (--upstream.public-keys; nullopt:
  // answers are not checked at all) and whether an unsigned answer is refused.
  std::optional<TrustedKeys> answer_keys;
  bool require_answer_signature = false;
  UpdateOptions update;                 // verification, registry, timeouts
  ReportOutboxOptions reports;          // url empty: no report is queued or sent
  // Called on the update loop's thread once the agent's own manifests of a new release
  // are applied (update.hand_over): the embedding re-executes `binary` ("": itself)
  // with `id` as its update.hand_over_id.
  std::function<void(const std::string& binary, const std::string& id)> on_hand_over;
};

class Agent {
 public:
  // Opens the state in `store`, creating it from the installed release when empty.
  // `clock` (which must outlive the agent) times polls, retries, risk evaluations and
  // every time the agent writes; tests pass an env::ManualClock and drive RunPass().
  static Result<std::unique_ptr<Agent>> Open(std::shared_ptr<ObjectStore> store, AgentOptions options,
                                             env::Clock& clock = env::RealClock());

  // One retrieval and one update step, persisted, then the reports that are due (tests
  // drive the agent with it).
  Status RunPass();
  // Until stopped: retrievals on this thread (next at the retriever's next fetch, 1 s
  // when risks are pending, or a wake-up), update steps on a second one (1 s while an
  // update waits on components, a wake-up, or the retry time of a refused release).
  // Returns within about a second of `stop`.
  void Run(std::stop_token stop);
  void Wake();  // a spec or component changed: both loops look again at once

  JsonValue ClusterVersionJson();
  // Called with the new metadata.resourceVersion each time the ClusterVersion is saved
  // changed, under the agent's lock: the observer must only record and signal (watches).
  // Set once, before the API serves.
  void OnSaved(std::function<void(int64_t resource_version)> observer);
  int64_t resource_version();
  // JSON merge patch of the whole object; only spec changes are kept (status and
  // metadata belong to the agent, as in Kubernetes). Returns the updated object, or a
  // field error.
  Result<JsonValue> PatchClusterVersion(const JsonValue& patch);

  // Components (ClusterOperator objects): read, create or replace, merge their status.
  Result<std::optional<JsonValue>> GetComponent(const std::string& name);
  Result<JsonArray> ListComponents();
  Result<JsonValue> PutComponent(const std::string& name, const JsonValue& object);
  Result<JsonValue> PatchComponentStatus(const std::string& name, const JsonValue& patch);

  // Objects the payloads applied (other than ClusterOperators), by store name.
  Result<std::optional<JsonValue>> GetObject(const std::string& name);
  Result<std::vector<std::string>> ListObjects();
  UpdateProgress update_progress();  // any thread

  std::string Metrics();
  LoopState state();
  bool ready();  // the state is loaded and its last save succeeded (a fetch may still be running)
  const StorageHealth& storage() const { return storage_; }

 private:
  Agent(std::shared_ptr<ObjectStore> store, AgentOptions options, env::Clock& clock);
  Status Save();  // under mu_
  void FitForStore(size_t size);  // under mu_: the ClusterVersion is `size` bytes, too large
  std::string Now() const;
  Status LoadState();
  Result<Release> RunningRelease(const ClusterVersion& cv);
  Status RetrievalPass();
  Status UpdatePass();
  void RunRetrievals(std::stop_token stop);
  void RunUpdates(std::stop_token stop);
  bool QueueReport(const std::string& cluster_id);  // the update loop, after a step
  void SendReports();                               // the retrieval loop
  void ApplyRetrieval(const RetrievedUpdates& got);
  void Transition();
  std::optional<Condition> ComponentsUpgradeable();

  std::shared_ptr<ObjectStore> store_;
  AgentOptions options_;
  env::Clock& clock_;
  std::stop_source shutdown_;  // cancels network work in flight
  StorageHealth storage_;
  PollReceiptBook poll_receipts_;  // asked for only with reports on; outlives the retriever and runner
  // What a retrieval asks with: the PromQL risk evaluation, the update service's fetcher
  // and the answers' trust, and the retriever over them (the retrieval loop only).
  struct Retrieval {
    std::unique_ptr<PrometheusEvaluator> prometheus;  // nullptr: no Prometheus configured
    std::unique_ptr<CachedRuleEvaluator> promql_cache;
    std::unique_ptr<HttpGraphFetcher> fetcher;
    std::unique_ptr<AnswerTrust> trust;          // nullptr: answers are not checked
    std::unique_ptr<UpdateRetriever> retriever;
  };
  Retrieval retrieval_;
  std::unique_ptr<ComponentObjects> components_;
  std::unique_ptr<UpdateRunner> runner_;        // the update loop only
  std::unique_ptr<ReportOutbox> outbox_;        // nullptr: reports are off

  std::mutex mu_;
  std::condition_variable_any wake_;
  // One loop's pace: a wake-up asked for and the time of its next pass unwoken (both under
  // mu_), and the passes it has finished (cincinnati_agent_passes_total{loop}): proof
  // that a loop ran, for whoever must tell "nothing changed" from "nothing ran".
  struct LoopPace {
    bool woken = false;
    std::chrono::system_clock::time_point next{};
    std::atomic<uint64_t> passes{0};
  };
  LoopPace retrieval_loop_, update_loop_;
  std::atomic<uint64_t> fetches_{0};  // requests to the update service
  ClusterVersion cv_;
  // Saving the ClusterVersion: whether the last save succeeded (ready()), what the store
  // holds, resourceVersion aside, and who is told of each changed save.
  struct Saving {
    bool ready = false;
    std::string last_saved;
    std::function<void(int64_t)> on_saved;
  };
  Saving saving_;
  LoopState state_ = LoopState::kRetrieving;
  std::optional<ListsOrigin> lists_origin_;  // what the lists in cv_ answer (update_retriever.h)
};

}  // namespace cincinnati::agent
