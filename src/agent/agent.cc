#include "agent/agent.h"

#include <fmt/format.h>
#include <sys/utsname.h>

#include <random>

#include "agent/desired_update.h"
#include "agent/graph_request.h"
#include "graph-data/time_format.h"

namespace cincinnati::agent {
namespace {

constexpr char kKind[] = "clusterversions";
constexpr char kName[] = "version";
constexpr char kComponents[] = "clusteroperators";  // = kComponentKind
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

// A PromQL matcher that refuses: no Prometheus was configured.
class NoPrometheus : public RuleEvaluator {
 public:
  Result<bool> Match(const MatchingRule&) override {
    return Status::Internal("no Prometheus is configured (--prometheus.url)");
  }
};

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

Agent::Agent(std::shared_ptr<ObjectStore> store, AgentOptions options, Clock clock)
    : store_(std::move(store)), options_(std::move(options)), clock_(std::move(clock)) {
  if (options_.arch.empty()) options_.arch = MachineArch();
  if (options_.poll_interval.count() <= 0) options_.poll_interval = DrawPollInterval();
  static NoPrometheus no_prometheus;
  RuleEvaluator* promql = &no_prometheus;
  if (!options_.prometheus.url.empty()) {
    prometheus_ = std::make_unique<PrometheusEvaluator>(options_.prometheus);
    promql = prometheus_.get();
  }
  promql_cache_ = std::make_unique<CachedRuleEvaluator>(*promql, clock_, options_.risk_cache);
  fetcher_ = std::make_unique<HttpGraphFetcher>(options_.upstream_ca_dir);
  components_ = std::make_unique<ComponentObjects>(*store_);
  options_.update.hand_over = static_cast<bool>(options_.on_hand_over);
  runner_ = std::make_unique<UpdateRunner>(*store_, *components_, options_.update, clock_);
  RetrieverSettings settings;
  settings.poll_interval = options_.poll_interval;
  retriever_ = std::make_unique<UpdateRetriever>(
      *fetcher_, [this](const std::vector<MatchingRule>& rules) { return MatchRules(rules, *promql_cache_); }, clock_,
      settings);
}

std::string Agent::Now() const {
  return graphdata::FormatDateTime(
      std::chrono::duration_cast<std::chrono::seconds>(clock_().time_since_epoch()).count());
}

Result<std::unique_ptr<Agent>> Agent::Open(std::shared_ptr<ObjectStore> store, AgentOptions options, Clock clock) {
  std::unique_ptr<Agent> agent(new Agent(std::move(store), std::move(options), std::move(clock)));
  CINCINNATI_ASSIGN_OR_RETURN(auto stored, agent->store_->Get(kKind, kName));
  CINCINNATI_RETURN_IF_ERROR(agent->runner_->Load());
  std::lock_guard lock(agent->mu_);
  if (stored) {
    auto cv = FromJson(*stored);
    if (!cv.ok()) return cv.status().WithContext("the stored ClusterVersion");
    agent->cv_ = std::move(cv).value();
    if (const JsonValue* annotations = stored->Find("metadata")->Find("annotations")) {
      if (const JsonValue* s = annotations->Find(kLoopStateAnnotation)) agent->state_ = ParseLoopState(s->text());
    }
    agent->retriever_->Seed(agent->cv_.status.conditional_updates);
    agent->ready_ = true;
    return agent;
  }
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
  agent->SetBaseConditions();
  CINCINNATI_RETURN_IF_ERROR(agent->Save());
  agent->ready_ = true;
  return agent;
}

void Agent::SetBaseConditions() {
  const std::string now = Now();
  const std::string& version = cv_.status.desired.version;
  cv_.SetCondition({"Available", "True", "", "Done applying " + version, now});
  cv_.SetCondition({"Failing", "False", "", "", now});
  if (!cv_.FindCondition("RetrievedUpdates")) cv_.SetCondition({"RetrievedUpdates", "False", "", "", now});
}

Status Agent::Save() {
  // A pass that changed nothing writes nothing (risk re-evaluation runs every second
  // while a risk is pending).
  auto document = [&] {
    JsonValue json = ToJson(cv_);
    JsonValue metadata = *json.Find("metadata");
    metadata.Set("annotations",
                 JsonValue::Object({{kLoopStateAnnotation, JsonValue::String(std::string(LoopStateName(state_)))}}));
    json.Set("metadata", std::move(metadata));
    return json;
  };
  JsonValue probe = document();
  JsonValue probe_metadata = *probe.Find("metadata");
  probe_metadata.Erase("resourceVersion");
  probe.Set("metadata", std::move(probe_metadata));
  std::string text = WriteJson(probe);
  if (text == last_saved_) return Status::OK();
  cv_.resource_version += 1;
  Status s = store_->Put(kKind, kName, document());
  if (!s.ok()) {
    cv_.resource_version -= 1;
    return s;
  }
  last_saved_ = std::move(text);
  return s;
}

void Agent::ApplyRetrieval(const RetrievedUpdates& got) {
  auto& status = cv_.status;
  status.available_updates = got.available;
  status.conditional_updates = got.conditional;
  Condition retrieved = got.retrieved;
  cv_.SetCondition(retrieved);
  if (got.current) {  // the graph's metadata fills what the release did not say
    if (status.desired.url.empty()) status.desired.url = got.current->url;
    if (status.desired.channels.empty()) status.desired.channels = got.current->channels;
  }
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
    return;
  }
  // The update runner words Progressing from here on (StepUpdate).
  state_ = LoopState::kUpdateRequested;
}

void Agent::StepUpdate() {
  ClusterVersion copy;
  std::optional<ResolvedTarget> target;
  bool force = false;
  int64_t generation = 0;
  {
    std::lock_guard lock(mu_);
    const UpdatePhase phase = runner_->progress().phase;
    const bool applying = phase == UpdatePhase::kApplying || phase == UpdatePhase::kHandingOver ||
                          phase == UpdatePhase::kCompleted;
    if (state_ != LoopState::kUpdateRequested && !applying) return;
    copy = cv_;
    target = ResolveDesiredUpdate(cv_);
    force = cv_.spec.desired_update && cv_.spec.desired_update->force;
    generation = cv_.generation;
  }
  UpdateStepResult step = runner_->Step(copy, target, force);  // network and disk, no lock
  std::lock_guard lock(mu_);
  if (cv_.generation != generation) {  // the spec changed meanwhile: start over with it
    next_pass_ = clock_();
    return;
  }
  cv_.status.history = std::move(copy.status.history);
  cv_.status.desired = std::move(copy.status.desired);
  cv_.status.conditions = std::move(copy.status.conditions);
  state_ = step.updating ? LoopState::kUpdating : LoopState::kRetrieving;
  if (step.busy) next_pass_ = std::min(next_pass_, clock_() + std::chrono::seconds(1));
  ready_ = Save().ok();
  if (step.hand_over_to && options_.on_hand_over) options_.on_hand_over(*step.hand_over_to);
}

Status Agent::RunPass() {
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
  RetrievedUpdates got = retriever_->Run(inputs, desired_multi, current_multi);  // network, no lock

  std::unique_lock lock(mu_);
  ApplyRetrieval(got);
  if (options_.auto_update && !cv_.spec.desired_update && !cv_.status.available_updates.empty()) {
    const Release& newest = cv_.status.available_updates.front();
    cv_.spec.desired_update = DesiredUpdate{newest.version, newest.image, false, ""};
    cv_.generation += 1;
  }
  SetBaseConditions();
  std::vector<ComponentUpgradeable> components;
  if (auto names = store_->List(kComponents); names.ok()) {
    for (const auto& name : *names) {
      auto object = store_->Get(kComponents, name);
      if (!object.ok() || !*object) continue;
      const JsonValue* conditions = (*object)->Find("status") ? (*object)->Find("status")->Find("conditions") : nullptr;
      if (!conditions || !conditions->is_array()) continue;
      for (const auto& c : conditions->items()) {
        const JsonValue* type = c.Find("type");
        if (!type || type->text() != "Upgradeable") continue;
        auto text = [&](const char* key) { const JsonValue* v = c.Find(key); return v && v->is_string() ? v->text() : ""; };
        components.push_back({name, {"Upgradeable", text("status"), text("reason"), text("message"), ""}});
      }
    }
  }
  if (auto upgradeable = UpgradeableCondition(components, Now())) {
    cv_.SetCondition(*upgradeable);
  } else {
    std::erase_if(cv_.status.conditions, [](const Condition& c) { return c.type == "Upgradeable"; });
  }
  Transition();
  cv_.status.observed_generation = cv_.generation;
  // Risks are evaluated again when their cached results may have aged out (the CVO's
  // resync); pending ones are retried after a second.
  next_pass_ = retriever_->NextFetch();
  if (!cv_.status.conditional_updates.empty()) {
    next_pass_ = std::min(next_pass_, clock_() + options_.risk_cache.min_for_condition);
  }
  if (got.risks_pending) next_pass_ = std::min(next_pass_, clock_() + std::chrono::seconds(1));
  Status saved = Save();
  ready_ = saved.ok();
  lock.unlock();
  StepUpdate();
  return saved;
}

void Agent::Wake() {
  {
    std::lock_guard lock(mu_);
    woken_ = true;
  }
  wake_.notify_all();
}

void Agent::Run(std::stop_token stop) {
  while (!stop.stop_requested()) {
    (void)RunPass();  // a failed save is retried at the next pass; the status says nothing new
    std::unique_lock lock(mu_);
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::max(next_pass_ - clock_(), std::chrono::system_clock::duration(std::chrono::milliseconds(200))));
    wake_.wait_until(lock, stop, deadline, [&] { return woken_; });
    woken_ = false;
  }
}

JsonValue Agent::ClusterVersionJson() {
  std::lock_guard lock(mu_);
  return ToJson(cv_);
}

Result<JsonValue> Agent::PatchClusterVersion(const JsonValue& patch) {
  if (!patch.is_object()) return Status::InvalidArgument("the patch must be a JSON object (application/merge-patch+json)");
  std::lock_guard lock(mu_);
  JsonValue merged = MergePatch(ToJson(cv_), patch);
  const JsonValue* spec_json = merged.Find("spec");
  if (!spec_json) return Status::InvalidArgument("spec: Required value");
  CINCINNATI_ASSIGN_OR_RETURN(ClusterVersionSpec spec, SpecFromJson(*spec_json));
  if (spec.cluster_id != cv_.spec.cluster_id && !cv_.spec.cluster_id.empty()) {
    // The CVO's API allows it, but a new ID makes the cluster a new one to every
    // update service; keep it stable.
    return Status::InvalidArgument("spec.clusterID: Forbidden: the cluster ID cannot change");
  }
  if (!(spec == cv_.spec)) {
    ClusterVersionSpec previous = cv_.spec;
    cv_.spec = std::move(spec);
    cv_.generation += 1;
    Status saved = Save();
    if (!saved.ok()) {
      cv_.spec = std::move(previous);
      cv_.generation -= 1;
      return saved;
    }
    woken_ = true;
    wake_.notify_all();
  }
  return ToJson(cv_);
}

Result<std::optional<JsonValue>> Agent::GetComponent(const std::string& name) { return components_->Get(name); }

Result<std::vector<JsonValue>> Agent::ListComponents() { return components_->List(); }

Result<JsonValue> Agent::PutComponent(const std::string& name, const JsonValue& object) {
  auto stored = components_->Put(name, object);
  if (stored.ok()) Wake();
  return stored;
}

Result<JsonValue> Agent::PatchComponentStatus(const std::string& name, const JsonValue& patch) {
  auto updated = components_->PatchStatus(name, patch);
  if (updated.ok()) Wake();  // a component reporting progress: look again at once
  return updated;
}

Result<std::optional<JsonValue>> Agent::GetObject(const std::string& name) { return components_->GetObject(name); }

Result<std::vector<std::string>> Agent::ListObjects() { return components_->ListObjects(); }

UpdateProgress Agent::update_progress() { return runner_->snapshot().progress; }

LoopState Agent::state() {
  std::lock_guard lock(mu_);
  return state_;
}

bool Agent::ready() {
  std::lock_guard lock(mu_);
  return ready_;
}

}  // namespace cincinnati::agent
