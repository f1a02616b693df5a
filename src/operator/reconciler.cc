#include "operator/reconciler.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "operator/health.h"
#include "operator/scheduler.h"
#include "operator/steps.h"

namespace cincinnati::upgrade {
namespace {

constexpr auto kResync = std::chrono::seconds(300);

UpgradeHistory& EnsureHistory(UpgradeConfig& config, const AgentSnapshot& agent, const std::string& now) {
  const std::string version = config.spec.desired.version;
  if (UpgradeHistory* h = config.FindHistory(version)) return *h;
  UpgradeHistory entry;
  entry.version = version;
  entry.preceding_version = PrecedingVersion(config, agent);
  auto commenced = HasUpgradeCommenced(config, agent);
  if (commenced.ok() && *commenced) {
    entry.MoveTo(Phase::kUpgrading);  // the agent already goes there: guarded steps skip
    entry.start_time = now;
  }
  config.SetHistory(std::move(entry));
  return *config.FindHistory(version);
}

// A pass's phase change: a move the table refuses (a bug) stops the pass with its error.
bool MovePhase(UpgradeHistory& history, Phase to, PassResult& result) {
  Status moved = history.MoveTo(to);
  if (!moved.ok()) result.error = moved;
  return moved.ok();
}

StepContext MakeStepContext(UpgradeConfig& config, UpgradeHistory& history, const AgentSnapshot& agent, const ClusterPorts& ports,
                            PassContext& pass) {
  return StepContext{config, history, pass.settings, agent, *ports.agent, ports.alerts, ports.windows, pass.notifications,
                     ports.hooks, pass.metrics, pass.now, pass.wall_now, pass.time_scale, *ports.calls};
}

PassResult RunUpgrader(UpgradeConfig& config, UpgradeHistory& history, const AgentSnapshot& agent, const ClusterPorts& ports,
                       PassContext& pass) {
  PassResult result;
  result.requeue = pass.interval;
  StepContext steps = MakeStepContext(config, history, agent, ports, pass);
  const std::string now = FormatTime(pass.now);
  if (StartWindowExpired(steps)) {
    std::string error, waiting;
    if (!MovePhase(history, RunFailurePath(steps, &error, &waiting), result)) return result;
    if (!error.empty()) result.error = Status::IoError(error);
    result.note = history.phase == Phase::kFailed ? "the upgrade was not commanded within its window" : error.empty() ? waiting : error;
    return result;
  }
  RunOutcome outcome = RunSteps(StepsFor(config.spec.type), steps, history, now);
  if (!MovePhase(history, outcome.phase, result)) return result;
  if (outcome.phase == Phase::kUpgraded) {
    if (history.complete_time.empty()) history.complete_time = now;
    result.requeue = kResync;
    return result;
  }
  result.note = outcome.step;
  result.waits_on_agent = outcome.error.empty() && outcome.step == "ControlPlaneUpgraded";
  result.agent_resource_version = agent.resource_version;
  if (!outcome.error.empty()) {
    result.error = Status::IoError(fmt::format("{}: {}", outcome.step, outcome.error));
  }
  return result;
}

// A notification that no step waits for: sent outside the pass, a failure logged (the
// ledger has no claim then, and the next pass sends it again).
void NotifyAside(const UpgradeConfig& config, std::string_view ev, const std::string& detail, const ClusterPorts& ports, PassContext& pass) {
  ports.calls->Await(fmt::format("notify {}", ev), [center = &pass.notifications, config, name = std::string(ev), detail, now = pass.now] {
    if (Status sent = center->Notify(config, name, now, detail); !sent.ok()) {
      spdlog::warn("cluster {}: the {} notification: {}", config.cluster, name, sent.message());
    }
    return StepResult::Done();
  });
}

PassResult Pending(UpgradeConfig& config, UpgradeHistory& history, const AgentSnapshot& agent, const ClusterPorts& ports,
                   PassContext& pass) {
  // Commanded already: the operator died between the command and saving its state (or
  // someone else told the agent). Validation would now refuse a target the cluster may
  // already run; the upgrade goes on where it stands, its guarded steps skipping what is
  // done, as the managed-upgrade operator does for an upgrade that has commenced.
  if (auto commenced = HasUpgradeCommenced(config, agent); commenced.ok() && *commenced) {
    if (PassResult refused; !MovePhase(history, Phase::kUpgrading, refused)) return refused;
    if (history.start_time.empty()) history.start_time = FormatTime(pass.now);
    spdlog::info("cluster {}: the upgrade to {} has commenced already: going on with it", config.cluster,
                 config.spec.desired.version);
    return RunUpgrader(config, history, agent, ports, pass);
  }
  PassResult result;
  const std::string version_before = config.spec.desired.version;
  ValidationResult valid = ValidateDesired(config, agent, {ports.resolver, ports.graph, pass.settings.cincinnati_check});
  const Labels labels = {{"upgradeconfig_name", config.cluster}};
  if (!valid.valid || valid.is_error) {
    pass.metrics.Set("upgradeoperator_upgradeconfig_validation_failed", labels, 1);
    // A failed send is unclaimed in the ledger and counted (upgrade_notification_failed):
    // the next pass sends it again. Said here too, so that a full disk is not silent.
    NotifyAside(config, event::kValidationFailed, valid.message, ports, pass);
    result.note = valid.message;
    if (valid.is_error) {
      result.error = Status::InvalidArgument(valid.message);
    } else {
      result.requeue = kResync;
    }
    return result;
  }
  pass.metrics.Set("upgradeoperator_upgradeconfig_validation_failed", labels, 0);
  if (config.spec.desired.version != version_before) {
    result.requeue = std::chrono::seconds(0);  // the image's version renamed the entry: go on with it
    result.note = "the desired version was read from the image";
    return result;
  }
  if (!valid.available_update) {
    result.requeue = kResync;
    return result;
  }
  auto decision = Schedule(config.spec.upgrade_at, pass.now, std::chrono::minutes(pass.settings.upgrade_window_minutes));
  if (!decision.ok()) {
    result.error = decision.status();
    return result;
  }
  if (!decision->ready) {
    result.requeue = std::min(decision->time_until, kResync);
    result.note = fmt::format("scheduled for {}", config.spec.upgrade_at);
    return result;
  }
  if (decision->breached) {
    // Honoured (the MUO ignores it): a start this late would land outside its maintenance slot.
    StepContext steps = MakeStepContext(config, history, agent, ports, pass);
    std::string error, waiting;
    if (!MovePhase(history, RunFailurePath(steps, &error, &waiting), result)) return result;
    if (!error.empty()) result.error = Status::IoError(error);
    result.note = "upgradeAt + the upgrade window passed before the upgrade could start";
    return result;
  }
  if (pass.hold) {
    if (std::string why = pass.hold(config); !why.empty()) {
      result.requeue = pass.interval;
      result.note = why;
      return result;
    }
  }
  if (!MovePhase(history, Phase::kUpgrading, result)) return result;
  history.start_time = FormatTime(pass.now);
  spdlog::info("cluster {}: upgrading to {}", config.cluster, config.spec.desired.version);
  return RunUpgrader(config, history, agent, ports, pass);
}

PassResult Reconcile(UpgradeConfig& config, const ClusterPorts& ports, PassContext& pass) {
  auto agent = ports.agent->Snapshot();
  if (!agent.ok()) {
    PassResult result;
    result.error = agent.status();
    result.note = "the cluster's agent cannot be read";
    result.agent_unreachable = agent.status().code() == Status::Code::kIoError;
    return result;
  }
  UpgradeHistory& history = EnsureHistory(config, *agent, FormatTime(pass.now));
  switch (history.phase) {
    case Phase::kNew: {
      auto at = ParseTime(config.spec.upgrade_at);
      if (pass.settings.pre_health_check_gate && at.ok() && *at - pass.now > std::chrono::hours(2)) {
        // An early notice: the pass goes on to Pending without waiting for Prometheus.
        auto current = CurrentVersion(*agent);
        const HealthLabels labels{config.cluster, "New", current.ok() ? *current : "unknown"};
        ports.calls->Await("health early", [alerts = ports.alerts, agent = *agent, settings = &pass.settings, metrics = &pass.metrics,
                                            center = &pass.notifications, config, labels, now = pass.now] {
          Status health = CheckClusterHealth(alerts, agent, *settings, *metrics, labels);
          Status sent = health.ok() ? Status::OK() : center->Notify(config, event::kPreHealthCheck, now, health.message());
          if (!sent.ok()) spdlog::warn("cluster {}: the pre_health_check notification: {}", config.cluster, sent.message());
          return StepResult::Done();
        });
      }
      PassResult result;
      result.requeue = std::chrono::seconds(0);
      MovePhase(history, Phase::kPending, result);
      return result;
    }
    case Phase::kPending:
      return Pending(config, history, *agent, ports, pass);
    case Phase::kUpgrading:
      return RunUpgrader(config, history, *agent, ports, pass);
    case Phase::kUpgraded:
    case Phase::kFailed: {
      PassResult result;
      result.requeue = kResync;
      return result;
    }
  }
  return {};
}

}  // namespace

PassResult ReconcileOnce(UpgradeConfig& config, const ClusterPorts& ports, PassContext& pass) {
  PendingCalls inline_calls;
  ClusterPorts with_calls = ports;
  if (!with_calls.calls) with_calls.calls = &inline_calls;
  with_calls.calls->BeginPass();
  PassResult result = Reconcile(config, with_calls, pass);
  with_calls.calls->EndPass();
  return result;
}

}  // namespace cincinnati::upgrade
