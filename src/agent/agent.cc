#include "agent/agent.h"

#include <fmt/format.h>
#include <sys/utsname.h>

#include <random>
#include <thread>

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "agent/desired_update.h"
#include "agent/state_salvage.h"
#include "core/guard.h"
#include "core/strings.h"
#include "graph-data/time_format.h"
#include "graph_client/graph_request.h"

namespace cincinnati::agent {

using kube::WriteJson;
using kube::JsonObject;
using kube::FindMember;
using kube::TextOf;
using kube::SetMember;
using kube::EraseMember;
using kube::ItemsOf;
namespace {

constexpr char kKind[] = "clusterversions";
constexpr char kName[] = "version";
constexpr char kLoopStateAnnotation[] = "agent.cincinnati.openshift.io/loop-state";

std::string MachineArch() {
  utsname u{};
  if (uname(&u) != 0) return "amd64";
  std::string m = u.machine;
  if (m == "x86_64") return "amd64";
  if (m == "aarch64") return "arm64";
  return m;  // ppc64le, s390x
}

std::string NewUuidV4() {
  std::random_device rd;
  std::uniform_int_distribution<int> hex(0, 15);
  std::string out = "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx";
  for (char& c : out) {
    if (c == 'x') c = "0123456789abcdef"[hex(rd)];
    if (c == 'y') c = "89ab"[hex(rd) & 3];
  }
  return out;
}

std::chrono::milliseconds DrawPollInterval() {
  // The CVO's: 2 min x (1 + U[0,1)).
  std::random_device rd;
  std::uniform_real_distribution<double> u(0.0, 1.0);
  return std::chrono::milliseconds(static_cast<int64_t>(120000 * (1.0 + u(rd))));
}

LoopState ParseLoopState(std::string_view name) {
  if (name == "Invalid") return LoopState::kInvalid;
  if (name == "UpdateRequested") return LoopState::kUpdateRequested;
  if (name == "Updating") return LoopState::kUpdating;
  return LoopState::kRetrieving;
}

// The conditions the update loop owns; the retrieval loop owns RetrievedUpdates and
// Upgradeable, and Transition the Invalid condition.
constexpr const char* kUpdateConditions[] = {"Available", "Failing", "Progressing", "ReleaseAccepted"};
// The most a stored ClusterVersion may be (the store takes up to 16 MiB).
constexpr size_t kMaxStateBytes = size_t{8} << 20;
// How often the update loop looks when nothing wakes it (a spec or component change does).
constexpr std::chrono::seconds kIdleUpdateCheck(30);

// What every update pass starts from: the running release is available and nothing
// fails; the update runner says otherwise while an update is under way.
void SetBaseConditions(ClusterVersion& cv, const std::string& now) {
  const std::string& version = cv.status.desired.version;
  cv.SetCondition({"Available", "True", "", "Done applying " + version, now});
  cv.SetCondition({"Failing", "False", "", "", now});
}

// The update runner's status in conditions, as the CVO's pkg/cvo/status.go words its
// sync worker's: on top of the base, and what the step left unsaid stays as it was.
void SetUpdateConditions(ClusterVersion& cv, const UpdateStatus& status, const std::string& now) {
  using Progress = UpdateStatus::Progress;
  if (status.release) {
    cv.SetCondition({"ReleaseAccepted", status.release->accepted ? "True" : "False", status.release->reason,
                     status.release->message, now});
  }
  switch (status.progress) {
    case Progress::kUnsaid:
      break;
    case Progress::kDownloading:
      cv.SetCondition({"Progressing", "True", "", fmt::format("Working towards {}: downloading update", status.target), now});
      break;
    case Progress::kApplying: {
      const int64_t percent = status.total ? status.done * 100 / status.total : 100;
      cv.SetCondition({"Progressing", "True", "",
                       fmt::format("Working towards {}: {} of {} done ({}% complete), waiting on {}", status.target, status.done,
                                   status.total, percent, fmt::join(status.waiting_on, ", ")),
                       now});
      break;
    }
    case Progress::kHandingOver:
      cv.SetCondition({"Progressing", "True", "",
                       fmt::format("Working towards {}: handing over to the new release's agent", status.target), now});
      break;
    case Progress::kNotAccepted:
      cv.SetCondition({"Progressing", "False", status.release ? status.release->reason : "",
                       fmt::format("Cluster version is {}; the update to {} was not accepted", cv.status.desired.version,
                                   status.target),
                       now});
      break;
    case Progress::kCompleted:
      cv.SetCondition({"Available", "True", "", "Done applying " + status.target, now});
      cv.SetCondition({"Progressing", "False", "", "Cluster version is " + status.target, now});
      break;
  }
  if (status.failure) cv.SetCondition({"Failing", "True", status.failure->reason, status.failure->message, now});
}

}  // namespace

std::string_view LoopStateName(LoopState state) {
  switch (state) {
    case LoopState::kRetrieving: return "Retrieving";
    case LoopState::kInvalid: return "Invalid";
    case LoopState::kUpdateRequested: return "UpdateRequested";
    case LoopState::kUpdating: return "Updating";
  }
  return "Retrieving";
}

Agent::Agent(std::shared_ptr<ObjectStore> store, AgentOptions options, env::Clock& clock)
    : store_(std::move(store)), options_(std::move(options)), clock_(clock) {
  if (options_.arch.empty()) options_.arch = MachineArch();
  if (options_.poll_interval.count() <= 0) options_.poll_interval = DrawPollInterval();
  static NoPrometheus no_prometheus;
  RuleEvaluator* promql = &no_prometheus;
  if (!options_.prometheus.url.empty()) {
    PrometheusSettings prometheus = options_.prometheus;
    prometheus.stop = shutdown_.get_token();
    retrieval_.prometheus = std::make_unique<PrometheusEvaluator>(prometheus);
    promql = retrieval_.prometheus.get();
  }
  retrieval_.promql_cache = std::make_unique<CachedRuleEvaluator>(*promql, clock_, options_.risk_cache);
  retrieval_.fetcher = std::make_unique<HttpGraphFetcher>(options_.upstream_ca_dir, options_.fetch_timeout,
                                                          shutdown_.get_token(), options_.max_answer_bytes);
  components_ = std::make_unique<ComponentObjects>(*store_);
  options_.update.hand_over = static_cast<bool>(options_.on_hand_over);
  options_.update.arch = options_.arch;
  if (!options_.reports.url.empty()) options_.update.poll_receipts = &poll_receipts_;
  runner_ = std::make_unique<UpdateRunner>(*store_, *components_, options_.update, clock_, shutdown_.get_token(), &storage_);
  if (!options_.reports.url.empty()) {
    ReportOutboxOptions reports = options_.reports;
    if (reports.ca_dir.empty()) reports.ca_dir = options_.upstream_ca_dir;
    reports.stop = shutdown_.get_token();
    outbox_ = std::make_unique<ReportOutbox>(*store_, std::move(reports), clock_, &storage_);
  }
  RetrieverSettings settings;
  settings.poll_interval = options_.poll_interval;
  settings.kept = options_.kept;
  settings.inject_cluster_id = options_.hypershift;
  if (outbox_) settings.receipts = &poll_receipts_;
  if (options_.answer_keys) {
    retrieval_.trust =
        std::make_unique<AnswerTrust>(*store_, *options_.answer_keys, options_.require_answer_signature, &storage_);
    settings.trust = retrieval_.trust.get();
  }
  retrieval_.retriever = std::make_unique<UpdateRetriever>(
      *retrieval_.fetcher,
      [this](const std::vector<MatchingRule>& rules) { return MatchRules(rules, *retrieval_.promql_cache); }, clock_,
      settings);
}

std::string Agent::Now() const {
  return graphdata::FormatDateTime(
      std::chrono::duration_cast<std::chrono::seconds>(clock_.Now().time_since_epoch()).count());
}

// Whether a failed read says something about the file's content (over a size limit,
// not JSON, not a ClusterVersion, not a regular file): worth salvaging or setting
// aside. Any other failure (permissions, I/O) is the disk's; it stops the agent naming
// the file, since a cluster must not get a new identity for a briefly unreadable file.
bool ContentError(const Status& s) {
  return s.code() == Status::Code::kInvalidArgument || s.code() == Status::Code::kTooLarge;
}

// The release a salvaged ClusterVersion runs when its status.desired was lost: the
// newest Completed entry of its history, else the last update the progress completed,
// else the installed release.
Result<Release> Agent::RunningRelease(const ClusterVersion& cv) {
  for (const auto& h : cv.status.history) {
    if (h.state == "Completed" && !h.version.empty()) return Release{h.version, h.image, "", {}, false};
  }
  const UpdateProgress& progress = runner_->progress();
  if (progress.phase == UpdatePhase::kCompleted && !progress.version.empty()) {
    return Release{progress.version, progress.image, "", {}, false};
  }
  return ReadInstalledRelease(options_.release);
}

// The stored ClusterVersion and update progress. Parts whose content cannot be read are
// salvaged or set aside, never a reason not to start; what was dropped is logged.
Status Agent::LoadState() {
  if (retrieval_.trust) CINCINNATI_RETURN_IF_ERROR(retrieval_.trust->Load());
  if (Status loaded = runner_->Load(); !loaded.ok()) {
    if (!ContentError(loaded)) return loaded;
    CINCINNATI_ASSIGN_OR_RETURN(std::string aside, store_->SetAside("agentstate", "update"));
    spdlog::warn("the update's progress could not be read ({}): set aside as {}; a requested update starts over",
                 loaded.message(), aside);
  }
  auto stored = store_->Get(kKind, kName);
  if (stored.ok() && !*stored) return Status::NotFound("no ClusterVersion yet");
  if (stored.ok()) {
    auto read = FromJson(**stored);
    if (read.ok()) {
      cv_ = std::move(read).value();
      const JsonValue* metadata = FindMember(*(*stored), "metadata");
      const JsonValue* annotations = metadata ? FindMember(*metadata, "annotations") : nullptr;
      if (const JsonValue* s = annotations ? FindMember(*annotations, kLoopStateAnnotation) : nullptr) {
        state_ = ParseLoopState(TextOf(*s));
      }
      lists_origin_ = ListsOrigin::FromAnnotations(annotations);
      retrieval_.retriever->Seed(cv_.status.available_updates, cv_.status.conditional_updates, lists_origin_);
      return Status::OK();
    }
    stored = read.status();
  }
  if (!ContentError(stored.status())) return stored.status();
  // The original is kept for a person to read; what can be read of it is salvaged.
  CINCINNATI_ASSIGN_OR_RETURN(std::string aside, store_->SetAside(kKind, kName));
  auto salvaged = SalvageClusterVersion(aside);
  if (!salvaged.ok()) {
    spdlog::error("the stored ClusterVersion cannot be read ({}) nor salvaged ({}); set aside as {}: starting as a new "
                  "cluster",
                  stored.status().message(), salvaged.status().message(), aside);
    return Status::NotFound("no readable ClusterVersion");
  }
  spdlog::warn("the stored ClusterVersion could not be read whole ({}); set aside as {}, kept the rest, dropped: {}",
               stored.status().message(), aside, fmt::join(salvaged->dropped, "; "));
  cv_ = std::move(salvaged->cv);
  if (cv_.status.desired.version.empty()) {
    CINCINNATI_ASSIGN_OR_RETURN(cv_.status.desired, RunningRelease(cv_));
    spdlog::warn("the running release is taken to be {} ({})", cv_.status.desired.version, cv_.status.desired.image);
    if (cv_.status.history.empty()) {
      const std::string now = Now();
      cv_.status.history.push_back({"Completed", now, now, cv_.status.desired.version, cv_.status.desired.image, false, ""});
    }
  }
  retrieval_.retriever->Seed(cv_.status.available_updates, cv_.status.conditional_updates);
  return Status::OK();
}

Result<std::unique_ptr<Agent>> Agent::Open(std::shared_ptr<ObjectStore> store, AgentOptions options, env::Clock& clock) {
  std::unique_ptr<Agent> agent(new Agent(std::move(store), std::move(options), clock));
  std::lock_guard lock(agent->mu_);
  Status loaded = agent->LoadState();
  if (loaded.ok()) {
    agent->saving_.ready = agent->Save().ok();  // a salvaged state is written back whole
    return agent;
  }
  if (loaded.code() != Status::Code::kNotFound) return loaded;
  CINCINNATI_ASSIGN_OR_RETURN(Release installed, ReadInstalledRelease(agent->options_.release));
  ClusterVersion& cv = agent->cv_;
  const std::string now = agent->Now();
  cv.creation_timestamp = now;
  cv.uid = NewUuidV4();
  cv.spec.cluster_id = NewUuidV4();
  cv.spec.channel = !agent->options_.initial_channel.empty() ? agent->options_.initial_channel
                    : installed.channels.empty()                ? ""
                                                                : installed.channels.front();
  cv.spec.upstream = agent->options_.initial_upstream;
  cv.status.desired = installed;
  cv.status.history.push_back({"Completed", now, now, installed.version, installed.image, false, ""});
  SetBaseConditions(cv, now);
  cv.SetCondition({"RetrievedUpdates", "False", "", "", now});
  CINCINNATI_RETURN_IF_ERROR(agent->Save());
  agent->saving_.ready = true;
  return agent;
}

Status Agent::Save() {
  // A pass that changed nothing writes nothing (risk re-evaluation runs every second
  // while a risk is pending).
  auto document = [&] {
    JsonValue json = ToJson(cv_);
    JsonValue metadata = *FindMember(json, "metadata");
    JsonValue annotations =
        JsonValue(JsonObject({{kLoopStateAnnotation, JsonValue(std::string(LoopStateName(state_)))}}));
    if (lists_origin_) lists_origin_->Annotate(annotations);  // in the same write as the lists
    SetMember(metadata, "annotations", std::move(annotations));
    SetMember(json, "metadata", std::move(metadata));
    return json;
  };
  auto probe_text = [&] {
    JsonValue probe = document();
    JsonValue probe_metadata = *FindMember(probe, "metadata");
    EraseMember(probe_metadata, "resourceVersion");
    SetMember(probe, "metadata", std::move(probe_metadata));
    return WriteJson(probe);
  };
  std::string text = probe_text();
  if (text.size() > kMaxStateBytes) {
    FitForStore(text.size());
    text = probe_text();
  }
  if (text == saving_.last_saved) return Status::OK();
  cv_.resource_version += 1;
  Status s = store_->Put(kKind, kName, document());
  if (storage_.Record(StorageArea::kState, s)) {
    if (s.ok()) {
      spdlog::info("the ClusterVersion is saved again");
    } else {
      spdlog::error("cannot save the ClusterVersion: {}", s.message());
    }
  }
  if (!s.ok()) {
    cv_.resource_version -= 1;
    return s;
  }
  saving_.last_saved = std::move(text);
  if (saving_.on_saved) saving_.on_saved(cv_.resource_version);
  return s;
}

void Agent::FitForStore(size_t size) {
  // What an update service sent is bounded by KeptLimits, but escaping and the
  // Recommended messages multiply it, and a salvaged or older state may hold anything:
  // the retrieved lists go first (the next poll fetches them again), then long
  // condition messages are cut and the history shortened.
  std::vector<std::string> dropped;
  if (!cv_.status.available_updates.empty() || !cv_.status.conditional_updates.empty()) {
    cv_.status.available_updates.clear();
    cv_.status.conditional_updates.clear();
    cv_.SetCondition({"RetrievedUpdates", "False", std::string(retrieval_reason::kResponseInvalid),
                      fmt::format("The updates retrieved would make the ClusterVersion {} bytes, more than the {} the "
                                  "agent stores; they are not kept",
                                  size, kMaxStateBytes),
                      Now()});
    dropped.push_back("the retrieved updates");
  }
  if (WriteJson(ToJson(cv_)).size() > kMaxStateBytes) {
    for (auto& c : cv_.status.conditions) c.message = Abbreviate(c.message, 4096);
    if (cv_.status.history.size() > 10) cv_.status.history.resize(10);
    for (auto& h : cv_.status.history) h.accepted_risks = Abbreviate(h.accepted_risks, 4096);
    dropped.push_back("long condition messages and old history entries");
  }
  spdlog::warn("the ClusterVersion would be {} bytes, more than the {} the agent stores: dropped {}", size,
               kMaxStateBytes, fmt::join(dropped, " and "));
}

void Agent::ApplyRetrieval(const RetrievedUpdates& got) {
  auto& status = cv_.status;
  status.available_updates = got.available;
  status.conditional_updates = got.conditional;
  Condition retrieved = got.retrieved;
  cv_.SetCondition(retrieved);
  lists_origin_ = got.origin;
  if (got.current) {  // the graph's metadata fills what the release did not say
    if (status.desired.url.empty()) status.desired.url = got.current->url;
    if (status.desired.channels.empty()) status.desired.channels = got.current->channels;
  }
}

// Upgradeable from the components' own conditions. A component whose object cannot be
// read counts as not upgradeable (fails closed): nobody can tell what it says.
std::optional<Condition> Agent::ComponentsUpgradeable() {
  std::vector<ComponentUpgradeable> components;
  ComponentList listed = components_->ListAll();
  for (const auto& [name, why] : listed.unreadable) {
    components.push_back({name, {"Upgradeable", "False", "ClusterOperatorUnreadable",
                                 "its ClusterOperator cannot be read: " + why.message(), ""}});
  }
  for (const auto& object : listed.objects) {
    const JsonValue* name = FindMember(object, "metadata") ? FindMember(*FindMember(object, "metadata"), "name") : nullptr;
    const JsonValue* status = FindMember(object, "status");
    const JsonValue* conditions = status ? FindMember(*status, "conditions") : nullptr;
    if (!name || !name->is_string() || !conditions) continue;
    for (const auto& c : ItemsOf(*conditions)) {
      const JsonValue* type = FindMember(c, "type");
      if (!type || TextOf(*type) != "Upgradeable") continue;
      auto text = [&](const char* key) { const JsonValue* v = FindMember(c, key); return v && v->is_string() ? TextOf(*v) : ""; };
      components.push_back({TextOf(*name), {"Upgradeable", text("status"), text("reason"), text("message"), ""}});
    }
  }
  return UpgradeableCondition(components, Now());
}

Status Agent::RetrievalPass() {
  GraphRequestInputs inputs;
  bool desired_multi = false, current_multi = false;
  {
    std::lock_guard lock(mu_);
    inputs.upstream = options_.update_service.empty() ? cv_.spec.upstream : options_.update_service;
    if (inputs.upstream.empty()) inputs.upstream = options_.update_service;
    inputs.cluster_id = cv_.spec.cluster_id;
    current_multi = cv_.status.desired.multi_architecture;
    desired_multi = cv_.spec.desired_update && cv_.spec.desired_update->architecture == "Multi";
    inputs.arch = desired_multi || current_multi ? "multi" : options_.arch;
    inputs.version = cv_.status.desired.version;
    inputs.channel = cv_.spec.channel;
  }
  RetrievedUpdates got = retrieval_.retriever->Run(inputs, desired_multi, current_multi);  // network, no lock
  if (got.fetched) ++fetches_;
  std::optional<Condition> upgradeable = ComponentsUpgradeable();                  // disk, no lock

  std::lock_guard lock(mu_);
  ApplyRetrieval(got);
  if (options_.auto_update && !cv_.spec.desired_update && !cv_.status.available_updates.empty()) {
    const Release& newest = cv_.status.available_updates.front();
    cv_.spec.desired_update = DesiredUpdate{newest.version, newest.image, false, ""};
    cv_.generation += 1;
    update_loop_.woken = true;
    wake_.notify_all();
  }
  if (upgradeable) {
    cv_.SetCondition(*upgradeable);
  } else {
    std::erase_if(cv_.status.conditions, [](const Condition& c) { return c.type == "Upgradeable"; });
  }
  // Risks are evaluated again when their cached results may have aged out (the CVO's
  // resync); pending ones are retried after a second.
  retrieval_loop_.next = retrieval_.retriever->NextFetch();
  if (!cv_.status.conditional_updates.empty()) {
    retrieval_loop_.next = std::min(retrieval_loop_.next, clock_.Now() + options_.risk_cache.min_for_condition);
  }
  if (got.risks_pending) retrieval_loop_.next = std::min(retrieval_loop_.next, clock_.Now() + std::chrono::seconds(1));
  Status saved = Save();
  saving_.ready = saved.ok();
  return saved;
}

void Agent::Transition() {
  const std::string now = Now();
  const std::string& version = cv_.status.desired.version;
  cv_.status.conditions.erase(std::remove_if(cv_.status.conditions.begin(), cv_.status.conditions.end(),
                                             [](const Condition& c) { return c.type == "Invalid"; }),
                              cv_.status.conditions.end());
  std::vector<std::string> errors = DesiredUpdateErrors(cv_);
  if (!errors.empty()) {
    state_ = LoopState::kInvalid;
    std::string message = errors.front();
    for (size_t i = 1; i < errors.size(); ++i) message += ", " + errors[i];
    cv_.SetCondition({"Invalid", "True", "InvalidClusterVersion", "The cluster version is invalid: " + message, now});
    cv_.SetCondition({"Progressing", "False", "InvalidClusterVersion",
                      fmt::format("Stopped at {}: the cluster version is invalid", version), now});
    return;
  }
  std::optional<ResolvedTarget> target = ResolveDesiredUpdate(cv_);
  if (!target) {
    state_ = LoopState::kRetrieving;
    cv_.SetCondition({"Progressing", "False", "", "Cluster version is " + version, now});
    // Nothing requested, a refused update cancelled: the running release is what the
    // agent reconciles, as the CVO's sync worker loads the current payload again, so
    // the refusal is no longer the news.
    if (const Condition* accepted = cv_.FindCondition("ReleaseAccepted"); accepted && accepted->status == "False") {
      cv_.SetCondition({"ReleaseAccepted", "True", "PayloadLoaded",
                        fmt::format("Payload loaded version=\"{}\" image=\"{}\"", version, cv_.status.desired.image), now});
    }
    return;
  }
  // The update runner words Progressing from here on (UpdatePass).
  state_ = LoopState::kUpdateRequested;
}

Status Agent::UpdatePass() {
  ClusterVersion copy;
  std::optional<ResolvedTarget> target;
  bool force = false, step = false;
  int64_t generation = 0;
  {
    std::lock_guard lock(mu_);
    Transition();
    cv_.status.observed_generation = cv_.generation;
    const UpdatePhase phase = runner_->progress().phase;
    const bool applying = phase == UpdatePhase::kApplying || phase == UpdatePhase::kHandingOver ||
                          phase == UpdatePhase::kCompleted;
    step = state_ == LoopState::kUpdateRequested || applying;
    copy = cv_;
    target = ResolveDesiredUpdate(cv_);
    force = cv_.spec.desired_update && cv_.spec.desired_update->force;
    generation = cv_.generation;
  }
  // The conditions this loop owns are computed on the copy from the base up, and
  // replace the old ones at once below: a reader never sees them flap.
  SetBaseConditions(copy, Now());
  const Release desired_before = copy.status.desired;
  UpdateStepResult result;
  if (step) result = runner_->Step(copy, target, force);  // network and disk, no lock
  SetUpdateConditions(copy, result.status, Now());
  const bool queued = QueueReport(copy.spec.cluster_id);  // disk, no lock
  std::unique_lock lock(mu_);
  cv_.status.history = std::move(copy.status.history);
  // status.desired changes when an update completes; otherwise what the retrieval filled
  // in meanwhile (its URL and channels) stays.
  // An installed release changes the graph request's version: ask again at once, or
  // the version just installed stays listed as an update until the next poll.
  const bool installed = !(copy.status.desired == desired_before);
  if (installed) cv_.status.desired = std::move(copy.status.desired);
  for (const char* type : kUpdateConditions) {
    if (const Condition* c = copy.FindCondition(type)) {
      cv_.SetCondition(*c);
    } else {
      std::erase_if(cv_.status.conditions, [&](const Condition& c) { return c.type == type; });
    }
  }
  if (step) state_ = result.updating ? LoopState::kUpdating : LoopState::kRetrieving;
  const auto now = clock_.Now();
  update_loop_.next = now + kIdleUpdateCheck;
  if (const FailedPhase* failed = runner_->progress().failed(); failed && failed->retry_at > 0) {
    update_loop_.next =
        std::min(update_loop_.next, std::chrono::system_clock::time_point(std::chrono::seconds(failed->retry_at)));
  }
  if (result.busy) update_loop_.next = std::min(update_loop_.next, now + std::chrono::seconds(1));
  if (cv_.generation != generation) update_loop_.next = now;  // the spec changed meanwhile: again with it
  Status saved = Save();
  saving_.ready = saved.ok();
  // A report just queued leaves with the retrieval loop's next pass, at once.
  if (installed || queued) retrieval_loop_.woken = true;
  lock.unlock();
  if (installed || queued) wake_.notify_all();
  if (result.hand_over_to && options_.on_hand_over) options_.on_hand_over(*result.hand_over_to, result.hand_over_id);
  return saved;
}

Status Agent::RunPass() {
  Status retrieved = RetrievalPass();
  Status updated = UpdatePass();
  SendReports();
  return retrieved.ok() ? updated : retrieved;
}

void Agent::Wake() {
  {
    std::lock_guard lock(mu_);
    retrieval_loop_.woken = update_loop_.woken = true;
  }
  wake_.notify_all();
}

void Agent::RunRetrievals(std::stop_token stop) {
  while (!stop.stop_requested()) {
    // A failed save is retried at the next pass; the storage health says why. Nothing
    // thrown (a bad_alloc) leaves the thread: the pass fails and the loop goes on.
    if (Status s = Guarded("a retrieval pass", [&] { return RetrievalPass(); }); !s.ok()) {
      spdlog::debug("retrieval pass: {}", s.message());
    }
    // A report that cannot be sent stays queued (the outbox logs and counts why); only
    // something thrown ends up here, and the next pass tries again.
    if (Status s = Guarded("sending update reports", [&] {
          SendReports();
          return Status::OK();
        });
        !s.ok()) {
      spdlog::warn("{}", s.message());
    }
    ++retrieval_loop_.passes;
    std::unique_lock lock(mu_);
    const auto wait = std::max(retrieval_loop_.next - clock_.Now(),
                               std::chrono::system_clock::duration(std::chrono::milliseconds(200)));
    wake_.wait_for(lock, stop, std::chrono::duration_cast<std::chrono::steady_clock::duration>(wait),
                   [&] { return retrieval_loop_.woken; });
    retrieval_loop_.woken = false;
  }
}

void Agent::RunUpdates(std::stop_token stop) {
  while (!stop.stop_requested()) {
    if (Status s = Guarded("an update pass", [&] { return UpdatePass(); }); !s.ok()) {
      spdlog::debug("update pass: {}", s.message());
    }
    ++update_loop_.passes;
    std::unique_lock lock(mu_);
    const auto wait =
        std::max(update_loop_.next - clock_.Now(), std::chrono::system_clock::duration(std::chrono::milliseconds(50)));
    wake_.wait_for(lock, stop, std::chrono::duration_cast<std::chrono::steady_clock::duration>(wait),
                   [&] { return update_loop_.woken; });
    update_loop_.woken = false;
  }
}

void Agent::Run(std::stop_token stop) {
  std::stop_callback cancel(stop, [this] { shutdown_.request_stop(); });
  std::jthread updates([this, stop](std::stop_token) { RunUpdates(stop); });
  RunRetrievals(stop);
}

}  // namespace cincinnati::agent
