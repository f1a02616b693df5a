// UpgradeOperator's passes (upgrade_operator.h, "Concurrency" and "Prompt progress"):
// dispatching due clusters, one cluster's pass and its end, the fleet's holds, the
// watches of agents, and the writes of a pass's state.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "operator/fleet_hold.h"
#include "operator/upgrade_operator.h"

namespace cincinnati::upgrade {
namespace {

constexpr std::chrono::seconds kMaxWatch{300};  // the agent's longest watch
// A config whose write failed is written again this soon (its next pass).
constexpr std::chrono::seconds kUnsavedRetry{1};
// Without a lease (a lock file), how long the store may stay unwritable before the
// replica steps down rather than go on with state it could not save.
constexpr std::chrono::seconds kUnwritableWithoutLease{10};

// The agent as a pass sees it: it commands only while this replica leads, checked just
// before each command, so that a pass still running on a deposed leader commands nothing.
class LeaderOnlyAgent final : public UpdateAgent {
 public:
  LeaderOnlyAgent(UpdateAgent& agent, const UpgradeOperator& op) : agent_(agent), op_(op) {}
  Result<AgentSnapshot> Snapshot() override { return agent_.Snapshot(); }
  Status SetChannel(const std::string& channel) override {
    if (!op_.Acting()) return Status::Conflict("this replica does not lead: no command");
    return agent_.SetChannel(channel);
  }
  Status SetDesiredUpdate(const std::string& version, const std::string& image) override {
    if (!op_.Acting()) return Status::Conflict("this replica does not lead: no command");
    return agent_.SetDesiredUpdate(version, image);
  }
  bool Watch(int64_t seen, std::chrono::seconds timeout, std::function<void(bool changed)> done) override {
    return agent_.Watch(seen, timeout, std::move(done));
  }

 private:
  UpdateAgent& agent_;
  const UpgradeOperator& op_;
};

}  // namespace

std::string UpgradeOperator::Hold(const UpgradeConfig& config, HoldKind& held) {
  // Under mu_ (called from ReconcileCluster's pass, which holds no lock: see there).
  // From memory only: the store is never read or written under mu_.
  auto pause = pauses_.InForce();
  if (pause.ok() && (!pauses_loaded_.term || *pauses_loaded_.term != replica_.role.acting_from())) {
    pause = Status::IoError("the fleet's pause was not read in this term yet");  // an earlier term's memory
  }
  if (!pause.ok()) {
    held = HoldKind::kPause;
    return "the fleet's pause cannot be read (upgrades wait): " + pause.status().message();
  }
  FleetPause in_force = *pause;
  if (in_force.reason.empty() && config_.failure_threshold > 0) {
    // Failures that ended in passes running now count before anyone else starts; the
    // pause itself is written after the passes end (CheckFailureThreshold).
    if (auto due = pauses_.DueOnFailures(FailedPerVersionLocked(), config_.failure_threshold)) {
      in_force = *due;
      passes_.ended = true;
    }
  }
  std::string why = FleetHold(config, config_, in_force, configs_, [this](const std::string& cluster) -> const std::map<std::string, std::string>* {
    auto it = clusters_.find(cluster);
    return it == clusters_.end() ? nullptr : &it->second->cluster.labels;
  });
  const bool paused = !in_force.reason.empty() && (in_force.version.empty() || in_force.version == config.spec.desired.version);
  held = why.empty() ? HoldKind::kNone : paused ? HoldKind::kPause : HoldKind::kSlots;
  return why;
}

std::string UpgradeOperator::Admit(const UpgradeConfig& config, HoldKind& held) {
  std::string why = Hold(config, held);
  if (!why.empty()) return why;
  // Counts as upgrading from now on for every other cluster's hold, before its pass ends.
  auto shared_it = configs_.find(config.cluster);
  if (shared_it == configs_.end()) return "its UpgradeConfig was removed";  // not while in a pass: SyncSource waits
  UpgradeConfig& shared = shared_it->second;
  UpgradeHistory entry;
  if (const UpgradeHistory* h = NewestHistory(config)) entry = *h;
  if (Status moved = entry.MoveTo(Phase::kUpgrading); !moved.ok()) return moved.message();  // not admitted: a bug, logged
  shared.SetHistory(std::move(entry));
  return "";
}

std::chrono::milliseconds UpgradeOperator::UnwritableLimit() const {
  const std::chrono::seconds lease = replica_.leadership->lease();
  return lease > kLeaseMargin ? lease - kLeaseMargin : kUnwritableWithoutLease;
}

std::chrono::seconds UpgradeOperator::AgentGrace() const { return options_.agent_timeout * 3; }

bool UpgradeOperator::NoteSave(ClusterState& state, const Status& saved) {
  if (saved.ok()) {
    state.unsaved = false;
    return false;
  }
  const auto now = options_.clock->Steady();
  if (!state.unsaved) state.unsaved_since = now;
  state.unsaved = true;
  return saved.code() != Status::Code::kConflict && now - state.unsaved_since >= UnwritableLimit();
}

bool UpgradeOperator::SaveUnsaved(ClusterState& state, const UpgradeConfig& config) {
  Status saved = store_->PutConfig(config);
  bool step_down = false;
  {
    std::lock_guard lock(mu_);
    step_down = NoteSave(state, saved);
    state.last_error = saved.ok() ? "" : "its state cannot be saved (nothing is done until it is): " + saved.message();
  }
  if (saved.ok()) return true;
  if (saved.message() != state.logged_error) spdlog::error("cluster {}: saving its state again: {}", config.cluster, saved.message());
  state.logged_error = saved.message();
  // Stepped down before the pass ends: whoever waits for the pass sees the new role.
  if (saved.code() == Status::Code::kConflict) StepDown(saved.message());  // another replica leads
  if (step_down) StepDown(UnwritableWhy(saved));
  // Nothing is done on state the store does not have: the pass is skipped.
  std::lock_guard lock(mu_);
  state.in_flight = false;
  SetDue(state, options_.clock->Steady() + kUnsavedRetry);
  if (--passes_.in_flight == 0) passes_.idle.notify_all();
  passes_.woken = true;
  passes_.wake.notify_all();
  return false;
}

std::string UpgradeOperator::UnwritableWhy(const Status& saved) const {
  return fmt::format("the state store stayed unwritable for {} s: {}", std::chrono::ceil<std::chrono::seconds>(UnwritableLimit()).count(),
                     saved.message());
}

std::optional<UpgradeConfig> UpgradeOperator::StartPass(ClusterState& state) {
  std::lock_guard lock(mu_);
  const bool stopped = passes_.stopping || !Leading();  // queued before Run() stopped or leadership went
  auto it = configs_.find(state.cluster.name);
  if (!stopped && it != configs_.end()) return it->second;
  state.in_flight = false;
  if (stopped) SetDue(state, state.due);  // back in the queue for a later Run(); without a config: nothing to do
  if (--passes_.in_flight == 0) passes_.idle.notify_all();
  return std::nullopt;
}

void UpgradeOperator::ReconcileCluster(ClusterState& state) {
  const auto started = std::chrono::steady_clock::now();
  std::optional<UpgradeConfig> started_with = StartPass(state);
  if (!started_with) return;
  UpgradeConfig config = std::move(*started_with);
  if (state.unsaved && !SaveUnsaved(state, config)) return;  // `unsaved` changes only in its own passes
  HoldKind held = HoldKind::kNone;
  PassContext pass{config_, *notifications_, metrics_, Now(), options_.clock->Now(), options_.time_scale, options_.interval,
                   [this, &held](const UpgradeConfig& c) {
                     std::lock_guard lock(mu_);
                     return Admit(c, held);
                   }};
  const UpgradeConfig before = config;
  ClusterPorts ports = state.ports.view();
  LeaderOnlyAgent agent(*ports.agent, *this);
  ports.agent = &agent;
  ports.calls = state.calls.get();
  PassResult result = ReconcileOnce(config, ports, pass);
  Status saved = Status::OK();
  if (!(config == before)) {
    saved = store_->PutConfig(config);
    if (!saved.ok()) spdlog::error("cluster {}: saving its state (kept in memory, written again at its next pass): {}", config.cluster, saved.message());
    if (saved.code() == Status::Code::kConflict) StepDown(saved.message());  // another replica leads
  }
  if (result.agent_resource_version >= 0) state.agent.seen = result.agent_resource_version;
  if (result.waits_on_agent) {
    WatchAgent(state, result.agent_resource_version);
  } else if (result.agent_unreachable && IsUpgrading(config) && state.agent.seen >= 0) {
    WatchAgent(state, state.agent.seen);  // it is heard of at once when it is back
  }
  if (auto retry = state.calls->SoonestRetry(pass.now)) {
    result.requeue = std::min(result.requeue, std::chrono::ceil<std::chrono::seconds>(*retry - pass.now));
  }
  if (!result.error.ok() && result.error.message() != state.logged_error) {
    spdlog::warn("cluster {}: {}", config.cluster, result.error.message());
  }
  state.logged_error = result.error.ok() ? "" : result.error.message();
  bool step_down = false;
  {
    std::lock_guard lock(mu_);
    step_down = NoteSave(state, saved);
  }
  if (step_down) StepDown(UnwritableWhy(saved));  // before the pass ends (see SaveUnsaved)
  std::lock_guard lock(mu_);
  FinishPass(state, std::move(config), result, held, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
}

void UpgradeOperator::FinishPass(ClusterState& state, UpgradeConfig config, const PassResult& result, HoldKind held, double seconds) {
  const auto now = options_.clock->Steady();
  std::chrono::seconds next = result.requeue;
  if (!result.error.ok()) {
    const auto base = std::max(options_.interval, std::chrono::seconds(1));
    state.backoff = state.backoff.count() == 0 ? base : std::min(state.backoff * 2, std::min(base * 5, std::chrono::seconds(300)));
    next = state.backoff;
  } else {
    state.backoff = std::chrono::seconds(0);
  }
  // An agent that cannot be read for a moment (it hands over to its successor) is not
  // the cluster's news: the last good note stays until AgentGrace() passed.
  if (result.agent_unreachable && state.agent.unreachable_since == env::Clock::SteadyTime{}) state.agent.unreachable_since = now;
  if (!result.agent_unreachable) state.agent.unreachable_since = {};
  if (!result.agent_unreachable || now - state.agent.unreachable_since >= AgentGrace()) {
    state.last_error = result.error.ok() ? "" : result.error.message();
    state.note = result.note;
  }
  if (state.unsaved) {
    next = std::min(next, std::chrono::duration_cast<std::chrono::seconds>(kUnsavedRetry));
    state.last_error = "its state is not saved yet (written again at its next pass)";
  }
  state.held = held;
  ++state.passes;
  state.last_pass_seconds = seconds;
  state.last_reconciled = options_.clock->Now();
  state.in_flight = false;
  auto due = state.rerun ? now : now + RealDelay(next);
  // A watch lasts at most kMaxWatch: the pass after it opens the next one.
  if (result.waits_on_agent) due = std::min(due, now + kMaxWatch);
  SetDue(state, due);
  state.rerun = false;
  // A slot or a wave freed: the clusters held for one need not wait an interval.
  auto shared = configs_.find(config.cluster);
  const bool was_upgrading = shared != configs_.end() && IsUpgrading(shared->second);
  const bool was_finished = shared != configs_.end() && IsFinished(shared->second);
  const bool frees = (was_upgrading && !IsUpgrading(config)) || (!was_finished && IsFinished(config));
  configs_[config.cluster] = std::move(config);
  if (frees) WakeHeld(false);
  --passes_.in_flight;
  passes_.ended = true;
  passes_.woken = true;
  passes_.wake.notify_all();
  if (passes_.in_flight == 0) passes_.idle.notify_all();
}

void UpgradeOperator::WakeHeld(bool pause_held) {
  const auto now = options_.clock->Steady();
  for (auto& [name, state] : clusters_) {
    if (state->held != (pause_held ? HoldKind::kPause : HoldKind::kSlots)) continue;
    if (state->in_flight) {
      state->rerun = true;
    } else if (state->due > now) {
      SetDue(*state, now);
    }
  }
  passes_.woken = true;
  passes_.wake.notify_all();
}

void UpgradeOperator::WatchAgent(ClusterState& state, int64_t seen) {
  {
    std::lock_guard lock(mu_);
    if (state.agent.watching) return;
    state.agent.watching = true;
  }
  // Up to one interval: when it ends without a change the regular pass is due anyway.
  const auto real = std::chrono::ceil<std::chrono::seconds>(RealDelay(options_.interval));
  const auto timeout = std::clamp(real, std::chrono::seconds(1), kMaxWatch);
  const bool started = state.ports.agent->Watch(seen, timeout, [this, &state](bool changed) {
    {
      std::lock_guard lock(mu_);
      state.agent.watching = false;
    }
    if (changed) CallEnded(state);  // the agent moved: its next pass at once
  });
  if (!started) {
    std::lock_guard lock(mu_);
    state.agent.watching = false;
  }
}

void UpgradeOperator::CallEnded(ClusterState& state) {
  std::lock_guard lock(mu_);
  if (state.in_flight) {
    state.rerun = true;
  } else {
    SetDue(state, options_.clock->Steady());
  }
  passes_.woken = true;
  passes_.wake.notify_all();
}

void UpgradeOperator::SetDue(ClusterState& state, env::Clock::SteadyTime due) {
  if (state.queued) passes_.due_queue.erase({state.due, &state});
  state.due = due;
  state.queued = !state.in_flight;
  if (state.queued) passes_.due_queue.insert({due, &state});
}

size_t UpgradeOperator::DispatchDue() {
  const auto now = options_.clock->Steady();
  if (!Acting()) return 0;
  size_t dispatched = 0;
  while (!passes_.due_queue.empty() && passes_.due_queue.begin()->first <= now) {
    ClusterState* state = passes_.due_queue.begin()->second;
    passes_.due_queue.erase(passes_.due_queue.begin());
    state->queued = false;
    // Without a config it waits out of the queue: SyncSource queues it when one comes.
    if (!configs_.count(state->cluster.name)) continue;
    state->in_flight = true;
    ++passes_.in_flight;
    ++dispatched;
    pass_pool_->Post([this, state] { ReconcileCluster(*state); });
  }
  return dispatched;
}

}  // namespace cincinnati::upgrade
