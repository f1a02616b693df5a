#include "operator/steps.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/semver.h"
#include "http/client.h"
#include "operator/health.h"
#include "operator/maintenance.h"
#include "operator/validation.h"

namespace cincinnati::upgrade {
namespace {

using R = StepResult;

std::string Now(const StepContext& c) { return FormatTime(c.now); }

// A window of the operator's time as real seconds (silences live on Alertmanager's clock).
std::chrono::seconds RealLength(const StepContext& c, std::chrono::minutes length) {
  const double scale = c.time_scale > 0 ? c.time_scale : 1.0;
  return std::chrono::seconds(static_cast<int64_t>(std::chrono::duration<double>(length).count() / scale + 0.5));
}
const std::string& Version(const StepContext& c) { return c.config.spec.desired.version; }

// The reference's timestamp gauges, recorded once per version (it rewrites them each pass).
void TimestampOnce(StepContext& c, const std::string& metric) {
  const Labels labels = {{"_id", c.agent.cluster_id.empty() ? "unknown" : c.agent.cluster_id},
                         {"upgradeconfig_name", c.config.cluster},
                         {"version", Version(c)}};
  double existing = 0;
  if (!c.metrics.Get(metric, labels, &existing)) {
    c.metrics.Set(metric, labels, static_cast<double>(std::chrono::duration_cast<std::chrono::seconds>(c.now.time_since_epoch()).count()));
  }
}

void SetGauge(StepContext& c, const std::string& metric, double value, bool with_version = false) {
  Labels labels = {{"upgradeconfig_name", c.config.cluster}};
  if (with_version) labels.push_back({"version", Version(c)});
  c.metrics.Set(metric, labels, value);
}

// Runs `step` unless the update has been commanded (then it is done).
template <typename F>
R UnlessCommenced(StepContext& c, F&& step) {
  auto commenced = HasUpgradeCommenced(c.config, c.agent);
  if (!commenced.ok()) return R::Error(commenced.status().message());
  if (*commenced) return R::Done();
  return step();
}

// A slow call of a step, run outside the pass (pending_calls.h): nullopt while it runs.
std::optional<R> Outside(StepContext& c, const std::string& key, std::function<R()> call) {
  return c.calls.Await(key, std::move(call));
}

// A notification sent before (the ledger says so) is done at once; one to send goes to
// the webhooks outside the pass, so that a hanging receiver holds no pass.
R Notify(StepContext& c, std::string_view ev, std::string_view detail = "") {
  if (!c.notifications.Remote()) {
    Status s = c.notifications.Notify(c.config, ev, c.now, detail);
    return s.ok() ? R::Done() : R::Error(s.message());
  }
  // A claim in the ledger is a send only once the call that made it has ended: a step
  // done while the webhook is still being called could end the upgrade, and a stop then
  // would lose the notification.
  const std::string key = fmt::format("notify {}", ev);
  if (!c.calls.Running(key)) {
    if (auto sent = c.notifications.Sent(c.config, ev); sent.ok() && *sent) return R::Done();
  }
  NotificationCenter* center = &c.notifications;
  auto got = Outside(c, key,
                     [center, config = c.config, name = std::string(ev), now = c.now, text = std::string(detail)] {
                       Status s = center->Notify(config, name, now, text);
                       return s.ok() ? R::Done() : R::Error(s.message());
                     });
  if (!got) return R::NotDone(fmt::format("sending the {} notification", ev));
  return *got;
}

HealthLabels LabelsFor(const StepContext& c) {
  auto current = CurrentVersion(c.agent);
  return {c.config.cluster, std::string(PhaseName(c.history.phase)), current.ok() ? *current : "unknown"};
}

std::map<std::string, std::string> HookEnv(const StepContext& c, const std::string& step) {
  return {{"UPGRADE_CLUSTER", c.config.cluster},
          {"UPGRADE_CLUSTER_ID", c.agent.cluster_id},
          {"UPGRADE_VERSION", Version(c)},
          {"UPGRADE_STEP", step},
          {"UPGRADE_MACHINES", std::to_string(c.agent.worker_pool.machine_count)},
          {"UPGRADE_UPDATED_MACHINES", std::to_string(c.agent.worker_pool.updated_machine_count)}};
}

// A hook's exit code as a step's answer: 0 done, 1 not done yet, anything else an error.
R RunHook(StepContext& c, const std::string& command, const std::string& step) {
  if (!c.hooks) return R::Error(fmt::format("the {} hook is configured but hooks cannot run here", step));
  auto got = Outside(c, "hook " + step,
                     [hooks = c.hooks, command, env = HookEnv(c, step), step,
                      timeout = std::chrono::seconds(c.settings.hook_timeout_seconds)] {
                       HookResult run = hooks->Run(command, env, timeout);
                       if (run.exit_code == 0) return R::Done();
                       if (run.exit_code == 1) return R::NotDone(fmt::format("the {} hook is not done yet", step));
                       return R::Error(fmt::format("the {} hook failed (exit {}): {}", step, run.exit_code, run.output));
                     });
  if (!got) return R::NotDone(fmt::format("the {} hook is running", step));
  return *got;
}

// Done, saying what the step skipped (its condition shows it).
R DoneSkipping(const char* what) { return R{StepOutcome::kDone, what}; }

// What a maintenance-window step without Alertmanager did.
constexpr const char* kNoAlertmanager = "skipped, no Alertmanager is configured (alertmanager in --config)";
// What a health check without Prometheus checked, in its condition.
constexpr const char* kComponentsOnly =
    "the components only, no Prometheus is configured for the alerts (prometheus in --config)";

// The health checks (Prometheus's alerts, the components), outside the pass: nullopt
// while Prometheus is asked, else OK or what is unhealthy.
std::optional<Status> ClusterHealth(StepContext& c, const std::string& key) {
  if (!c.alerts) return CheckClusterHealth(nullptr, c.agent, c.settings, c.metrics, LabelsFor(c));  // the components only: no call
  auto got = Outside(c, key, [alerts = c.alerts, agent = c.agent, settings = &c.settings, metrics = &c.metrics, labels = LabelsFor(c)] {
    Status health = CheckClusterHealth(alerts, agent, *settings, *metrics, labels);
    return health.ok() ? R::Done() : R::Error(health.message());
  });
  if (!got) return std::nullopt;
  return got->outcome == StepOutcome::kDone ? Status::OK() : Status::IoError(got->message);
}

// An Alertmanager call outside the pass, as a step's answer.
R WindowCall(StepContext& c, const std::string& key, std::function<Status(MaintenanceWindows&)> call) {
  if (!c.windows) return DoneSkipping(kNoAlertmanager);
  auto got = Outside(c, key, [windows = c.windows, call = std::move(call)] {
    Status s = call(*windows);
    return s.ok() ? R::Done() : R::Error(s.message());
  });
  if (!got) return R::NotDone("waiting for Alertmanager");
  return *got;
}

R SendStartedNotification(StepContext& c) {
  return UnlessCommenced(c, [&] {
    R r = Notify(c, event::kStarted);
    if (r.outcome == StepOutcome::kDone) TimestampOnce(c, "upgradeoperator_upgrade_started_timestamp");
    return r;
  });
}

R UpgradeDelayedCheck(StepContext& c) {
  return UnlessCommenced(c, [&] {
    if (c.history.start_time.empty()) return R::NotDone("the upgrade has not started");
    auto started = ParseTime(c.history.start_time);
    const auto trigger = std::chrono::minutes(c.settings.delay_trigger_minutes);
    if (started.ok() && trigger.count() > 0 && *started + trigger < c.now) return Notify(c, event::kDelayed);
    return R::Done();
  });
}

R IsUpgradeable(StepContext& c) {
  return UnlessCommenced(c, [&] {
    if (c.agent.upgradeable.status != "False") return R::Done();
    auto current = CurrentVersion(c.agent);
    auto desired = Version::Parse(Version(c));
    if (!current.ok() || !desired.ok()) return R::Done();
    auto cur = Version::Parse(*current);
    if (!cur.ok()) return R::Done();
    const bool minor_bump = desired->major() >= cur->major() && desired->minor() > cur->minor();
    if (!minor_bump) return R::Done();
    std::string when = c.config.spec.upgrade_at;
    if (auto at = ParseTime(c.config.spec.upgrade_at); at.ok()) {
      // Go's time.UnixDate in UTC: "Mon Jan _2 15:04:05 UTC 2006".
      const std::time_t t = std::chrono::system_clock::to_time_t(*at);
      std::tm tm{};
      gmtime_r(&t, &tm);
      char buf[64];
      std::strftime(buf, sizeof buf, "%a %b %e %H:%M:%S UTC %Y", &tm);
      when = buf;
    }
    return R::Error(fmt::format("cluster upgrade to version {} on {} has been cancelled: {}: {}", Version(c), when,
                                c.agent.upgradeable.reason, c.agent.upgradeable.message));
  });
}

R PreUpgradeHealthCheck(StepContext& c) {
  return UnlessCommenced(c, [&] {
    std::optional<Status> checked = ClusterHealth(c, "health before");
    if (!checked) return R::NotDone("checking the cluster's health");
    const Status& health = *checked;
    if (health.ok()) return (c.alerts ? R::Done() : DoneSkipping(kComponentsOnly));
    if (!c.settings.pre_health_check_gate) return R::Error(health.message());
    R sent = Notify(c, event::kHealthCheck, health.message());
    if (sent.outcome != StepOutcome::kDone) return sent;  // on its way, or failed
    return R::NotDone(health.message());
  });
}

// One attempt: done, an error that is final (HTTP 4xx: "final" in its message), or one to retry.
R ProbeOnce(const std::string& url, std::chrono::seconds timeout) {
  http::GetOptions options;
  options.timeout = timeout;
  http::Result got = http::Get(url, options);
  if (got.status > 0 && got.status < 400) return R::Done();
  if (got.status >= 400 && got.status < 500) return R::NotDone(fmt::format("{} answered HTTP {}", url, got.status));
  return R::Error(got.status ? fmt::format("{} answered HTTP {}", url, got.status) : got.error);
}

// Up to 3 attempts per URL, 1 s then 2 s apart (operator time), as the MUO's probe; the
// pauses are scheduled retries (pending_calls.h), never a sleep.
R ProbeDependency(StepContext& c, const std::string& url) {
  const std::string key = "dependency " + url;
  if (auto not_before = c.calls.NotBefore(key); not_before && c.now < *not_before) {
    return R::NotDone(fmt::format("{} is tried again at {}", url, FormatTime(*not_before)));
  }
  auto got = Outside(c, key, [url, timeout = std::chrono::seconds(c.settings.dependency_timeout_seconds)] { return ProbeOnce(url, timeout); });
  if (!got) return R::NotDone("probing " + url);
  if (got->outcome == StepOutcome::kDone) {
    c.calls.Forget(key);
    return R::Done();
  }
  if (got->outcome == StepOutcome::kNotDone) {  // a 4xx answer: no retry
    c.calls.Forget(key);
    return R::Error(got->message);
  }
  const int failures = c.calls.RetryAfter(key, c.now + std::chrono::seconds(1 << std::min(c.calls.Failures(key), 4)));
  if (failures >= 3) {
    c.calls.Forget(key);
    return R::Error(got->message);
  }
  return R::NotDone(fmt::format("{} (attempt {} of 3)", got->message, failures));
}

R ExternalDependencyAvailabilityCheck(StepContext& c) {
  return UnlessCommenced(c, [&] {
    for (const auto& url : c.settings.dependency_urls) {
      R probed = ProbeDependency(c, url);
      if (probed.outcome == StepOutcome::kError) return R::Error("external dependency unavailable: " + probed.message);
      if (probed.outcome == StepOutcome::kNotDone) return R::NotDone("external dependency: " + probed.message);
    }
    return R::Done();
  });
}

R EnsureExtraUpgradeWorkers(StepContext& c) {
  if (!c.config.spec.capacity_reservation) return R::Done();
  return UnlessCommenced(c, [&] {
    if (c.settings.capacity_hook.empty()) return Notify(c, event::kScaleSkipped);
    R r = RunHook(c, c.settings.capacity_hook, "capacityReservation");
    if (r.outcome == StepOutcome::kDone) SetGauge(c, "upgradeoperator_scaling_failed", 0);
    if (r.outcome != StepOutcome::kNotDone) return r;
    const UpgradeCondition* cond = c.history.FindCondition("ComputeCapacityReserved");
    auto started = cond ? ParseTime(cond->start_time) : Result<TimePoint>(Status::NotFound(""));
    if (started.ok() && c.now > *started + std::chrono::minutes(c.settings.scale_timeout_minutes)) {
      SetGauge(c, "upgradeoperator_scaling_failed", 1);
      return Notify(c, event::kSkipped);  // go on without the extra capacity
    }
    return r;
  });
}

R CreateControlPlaneMaintWindow(StepContext& c) {
  return WindowCall(c, "window control plane",
                    [settings = &c.settings, target = WindowTarget{c.config.cluster, Version(c)}, now = c.wall_now,
                     length = RealLength(c, std::chrono::minutes(c.settings.control_plane_minutes))](MaintenanceWindows& windows) {
                      return EnsureControlPlaneWindow(windows, *settings, target, now, length);
                    });
}

// The MUO's EnsureDesiredConfig: the agent is told where to go, once it offers the release.
R CommandAgent(StepContext& c) {
  const Desired& d = c.config.spec.desired;
  if (!d.image.empty()) {
    Status s = c.agent_port.SetDesiredUpdate("", d.image);
    return s.ok() ? R::Done() : R::Error(s.message());
  }
  if (!d.channel.empty() && d.channel != c.agent.channel) {
    Status s = c.agent_port.SetChannel(d.channel);
    if (!s.ok()) return R::Error(s.message());
    return R::NotDone(fmt::format("the channel is now {}; waiting for the cluster to offer {}", d.channel, d.version));
  }
  for (const auto& r : c.agent.available_updates) {
    if (r.version == d.version && !r.image.empty()) {
      Status s = c.agent_port.SetDesiredUpdate(d.version, "");
      return s.ok() ? R::Done() : R::Error(s.message());
    }
  }
  for (const auto& r : c.agent.conditional_updates) {
    if (r.version == d.version) {  // the reference accepts conditional updates' risks
      Status s = c.agent_port.SetDesiredUpdate(d.version, r.image);
      return s.ok() ? R::Done() : R::Error(s.message());
    }
  }
  return R::NotDone(fmt::format("version {} is not yet offered by the cluster", d.version));
}

R CommenceUpgrade(StepContext& c) {
  SetGauge(c, "upgradeoperator_upgrade_window_breached", 0);
  return UnlessCommenced(c, [&] {
    R sent = Notify(c, event::kControlPlaneStarted);
    if (sent.outcome != StepOutcome::kDone) return sent;  // on its way, or failed
    R r = CommandAgent(c);
    if (r.outcome == StepOutcome::kDone) TimestampOnce(c, "upgradeoperator_controlplane_upgrade_started_timestamp");
    return r;
  });
}

R ControlPlaneUpgraded(StepContext& c) {
  if (HasUpgradeCompleted(c.config, c.agent)) {
    R sent = Notify(c, event::kControlPlaneFinished);
    if (sent.outcome != StepOutcome::kDone) return sent;  // on its way, or failed
    SetGauge(c, "upgradeoperator_controlplane_timeout", 0, true);
    TimestampOnce(c, "upgradeoperator_controlplane_upgrade_completed_timestamp");
    TimestampOnce(c, "upgradeoperator_workernode_upgrade_started_timestamp");
    return R::Done();
  }
  std::string reference = c.config.spec.upgrade_at;
  for (const auto& h : c.agent.history) {
    if (h.version == Version(c) && !h.started_time.empty()) {
      reference = h.started_time;
      break;
    }
  }
  auto started = ParseTime(reference);
  if (started.ok() && c.now > *started + std::chrono::minutes(c.settings.control_plane_minutes)) {
    SetGauge(c, "upgradeoperator_controlplane_timeout", 1, true);  // keeps waiting: never fails
  }
  if (c.agent.failing.status == "True") return R::NotDone("the cluster reports Failing: " + c.agent.failing.message);
  return R::NotDone(c.agent.progressing.message);
}

R RemoveWindowsOf(StepContext& c, std::string_view kind) {
  return WindowCall(c, fmt::format("remove {}", kind),
                    [settings = &c.settings, target = WindowTarget{c.config.cluster, Version(c)}, kind = std::string(kind)](
                        MaintenanceWindows& windows) { return RemoveWindows(windows, *settings, target, kind); });
}

R RemoveControlPlaneMaintWindow(StepContext& c) { return RemoveWindowsOf(c, "OSD control plane"); }

R CreateWorkerMaintWindow(StepContext& c) {
  const WorkerPool& pool = c.agent.worker_pool;
  const int64_t pending = pool.machine_count - pool.updated_machine_count;
  if (!c.windows) return DoneSkipping(kNoAlertmanager);
  if (!pool.updating() || pending < 1) return R::Done();
  const int per_node = std::max(c.config.spec.pdb_force_drain_timeout, c.settings.node_drain_timeout_minutes);
  const std::chrono::minutes length(pending * per_node + pending * c.settings.expected_node_drain_minutes);
  // Keyed by the machines pending: a resize is a new call.
  return WindowCall(c, fmt::format("window workers {}", pending),
                    [settings = &c.settings, target = WindowTarget{c.config.cluster, Version(c)}, pending, length = RealLength(c, length),
                     now = c.wall_now](MaintenanceWindows& windows) {
                      return EnsureWorkerWindow(windows, *settings, target, pending, length, now);
                    });
}

R AllWorkersUpgraded(StepContext& c) {
  const WorkerPool& pool = c.agent.worker_pool;
  if (pool.updating()) {
    if (c.history.worker_start_time.empty()) c.history.worker_start_time = Now(c);
    if (c.windows) {
      auto active = Outside(c, "window active", [windows = c.windows, settings = &c.settings, target = WindowTarget{c.config.cluster, Version(c)}] {
        auto is = MaintenanceActive(*windows, *settings, target);
        if (!is.ok()) return R::Error(is.status().message());
        return R{StepOutcome::kDone, *is ? "active" : ""};
      });
      if (active && active->outcome == StepOutcome::kDone) SetGauge(c, "upgradeoperator_worker_timeout", active->message.empty() ? 1 : 0, true);
    }
    if (!c.settings.drain_hook.empty()) {
      R drained = RunHook(c, c.settings.drain_hook, "drain");
      if (drained.outcome == StepOutcome::kError) spdlog::warn("cluster {}: {}", c.config.cluster, drained.message);
    }
    return R::NotDone(fmt::format("{} of {} machines updated", pool.updated_machine_count, pool.machine_count));
  }
  R sent = Notify(c, event::kWorkersFinished);
  if (sent.outcome != StepOutcome::kDone) return sent;  // on its way, or failed
  if (pool.found && c.history.worker_complete_time.empty()) {
    if (c.history.worker_start_time.empty()) c.history.worker_start_time = Now(c);
    c.history.worker_complete_time = Now(c);
  }
  TimestampOnce(c, "upgradeoperator_workernode_upgrade_completed_timestamp");
  SetGauge(c, "upgradeoperator_worker_timeout", 0, true);
  return R::Done();
}

R RemoveExtraScaledNodes(StepContext& c) {
  if (!c.config.spec.capacity_reservation || c.settings.capacity_removal_hook.empty()) return R::Done();
  return RunHook(c, c.settings.capacity_removal_hook, "capacityRemoval");
}

R RemoveMaintWindow(StepContext& c) { return RemoveWindowsOf(c, "OSD worker node"); }

R PostUpgradeHealthCheck(StepContext& c) {
  std::optional<Status> health = ClusterHealth(c, "health after");
  if (!health) return R::NotDone("checking the cluster's health");
  return health->ok() ? (c.alerts ? R::Done() : DoneSkipping(kComponentsOnly)) : R::Error(health->message());
}

R PostUpgradeProcedures(StepContext&) { return R::Done(); }

R SendCompletedNotification(StepContext& c) {
  R r = Notify(c, event::kCompleted);
  if (r.outcome == StepOutcome::kDone) TimestampOnce(c, "upgradeoperator_upgrade_completed_timestamp");
  return r;
}

UpgradeStep S(const char* name, const char* condition, StepResult (*run)(StepContext&)) { return {name, condition, run}; }

}  // namespace

std::vector<UpgradeStep> OsdSteps() {
  return {
      S("SendStartedNotification", "StartedNotificationSent", SendStartedNotification),
      S("UpgradeDelayedCheck", "UpgradeDelayedCheck", UpgradeDelayedCheck),
      S("IsUpgradeable", "IsClusterUpgradable", IsUpgradeable),
      S("PreUpgradeHealthCheck", "ClusterHealthyBeforeUpgrade", PreUpgradeHealthCheck),
      S("ExternalDependencyAvailabilityCheck", "ExternalDependenciesAvailable", ExternalDependencyAvailabilityCheck),
      S("EnsureExtraUpgradeWorkers", "ComputeCapacityReserved", EnsureExtraUpgradeWorkers),
      S("CreateControlPlaneMaintWindow", "ControlPlaneMaintenanceWindowCreated", CreateControlPlaneMaintWindow),
      S("CommenceUpgrade", "UpgradeCommenced", CommenceUpgrade),
      S("ControlPlaneUpgraded", "ControlPlaneUpgraded", ControlPlaneUpgraded),
      S("RemoveControlPlaneMaintWindow", "ControlPlaneMaintenanceWindowRemoved", RemoveControlPlaneMaintWindow),
      S("CreateWorkerMaintWindow", "WorkersMaintenanceWindowCreated", CreateWorkerMaintWindow),
      S("AllWorkersUpgraded", "WorkerNodesUpgraded", AllWorkersUpgraded),
      S("RemoveExtraScaledNodes", "ComputeCapacityRemoved", RemoveExtraScaledNodes),
      S("RemoveMaintWindow", "WorkersMaintenanceWindowRemoved", RemoveMaintWindow),
      S("PostUpgradeHealthCheck", "ClusterHealthyAfterUpgrade", PostUpgradeHealthCheck),
      S("PostUpgradeProcedures", "PostUpgradeTasksCompleted", PostUpgradeProcedures),
      S("SendCompletedNotification", "CompletedNotificationSent", SendCompletedNotification),
  };
}

std::vector<UpgradeStep> AroSteps() {
  std::vector<UpgradeStep> steps = OsdSteps();
  std::erase_if(steps, [](const UpgradeStep& s) {
    return s.name == "UpgradeDelayedCheck" || s.name == "IsUpgradeable" || s.name == "PostUpgradeProcedures";
  });
  return steps;
}

const std::vector<UpgradeStep>& StepsFor(UpgradeType type) {
  static const std::vector<UpgradeStep> osd = OsdSteps();
  static const std::vector<UpgradeStep> aro = AroSteps();
  return type == UpgradeType::kARO ? aro : osd;
}

bool StartWindowExpired(const StepContext& c) {
  if (c.config.spec.type != UpgradeType::kOSD || c.settings.upgrade_window_minutes <= 0) return false;
  auto commenced = HasUpgradeCommenced(c.config, c.agent);
  if (!commenced.ok() || *commenced) return false;
  auto started = ParseTime(c.history.start_time);
  return started.ok() && c.now > *started + std::chrono::minutes(c.settings.upgrade_window_minutes);
}

Phase RunFailurePath(StepContext& c, std::string* error, std::string* waiting) {
  const std::string now = Now(c);
  UpgradeCondition failed{"FailedUpgrade", "False", "Upgrade failed", "FailedUpgrade notification sent", now, "", "", ""};
  if (!c.history.FindCondition("FailedUpgrade")) c.history.SetCondition(failed, now);
  if (c.config.spec.capacity_reservation && !c.settings.capacity_removal_hook.empty()) {
    R removed = RunHook(c, c.settings.capacity_removal_hook, "capacityRemoval");
    if (removed.outcome == StepOutcome::kNotDone && waiting) {  // running, or not done yet: no back-off
      *waiting = removed.message;
      return c.history.phase;
    }
    if (removed.outcome != StepOutcome::kDone) {
      *error = removed.message.empty() ? "capacity is still being removed" : removed.message;
      RecordStep(c.history, "FailedUpgrade", R::Error(*error), now);
      return c.history.phase;
    }
  }
  R sent = Notify(c, event::kFailed);
  if (sent.outcome == StepOutcome::kNotDone) {  // on its way: not an error, no back-off
    if (waiting) *waiting = sent.message;
    return c.history.phase;
  }
  if (sent.outcome == StepOutcome::kError) {
    *error = sent.message;
    RecordStep(c.history, "FailedUpgrade", sent, now);
    return c.history.phase;
  }
  SetGauge(c, "upgradeoperator_upgrade_window_breached", 1);
  for (const char* metric : {"upgradeoperator_upgradeconfig_validation_failed", "upgradeoperator_scaling_failed"}) {
    c.metrics.Remove(metric, {{"upgradeconfig_name", c.config.cluster}});
  }
  c.metrics.Remove("upgradeoperator_controlplane_timeout", {{"upgradeconfig_name", c.config.cluster}});
  c.metrics.Remove("upgradeoperator_worker_timeout", {{"upgradeconfig_name", c.config.cluster}});
  c.metrics.Remove("upgradeoperator_healthcheck_failed", {{"upgradeconfig_name", c.config.cluster}});
  c.metrics.Remove("upgradeoperator_upgrade_started_timestamp", {{"upgradeconfig_name", c.config.cluster}});
  failed.status = "True";
  failed.complete_time = now;
  if (const UpgradeCondition* existing = c.history.FindCondition("FailedUpgrade")) failed.start_time = existing->start_time;
  c.history.SetCondition(failed, now);
  return Phase::kFailed;
}

}  // namespace cincinnati::upgrade
