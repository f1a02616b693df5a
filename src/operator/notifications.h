// Notifications (the MUO's event manager and notifier): the events an upgrade sends, their
// descriptions, the at-most-once ledger, and the upgrade-policy state machine a remote
// policy service is told about.
//
// NotificationCenter::Notify(config, event) sends an event at most once per cluster,
// version and event: the ledger row is written (durably) before the webhooks are called;
// a failed send removes it again so that the step retries on a later pass (and sets
// upgrade_notification_failed=1); a crash between the two loses the notification rather
// than sending it twice, as the reference's ledger does. With no webhook configured the
// event is logged only (the reference's log notifier).
//
// Thread-safe (the store and the notifiers are); never throws.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "operator/operator_metrics.h"
#include "operator/ports.h"
#include "operator/scheduler.h"
#include "operator/state_store.h"
#include "operator/upgrade_config.h"

namespace cincinnati::upgrade {

// Event names (the reference's states, in lower case, as webhook `event` values).
namespace event {
inline constexpr std::string_view kStarted = "started";
inline constexpr std::string_view kDelayed = "delayed";
inline constexpr std::string_view kScaleSkipped = "scale_skipped";
inline constexpr std::string_view kSkipped = "skipped";
inline constexpr std::string_view kCompleted = "completed";
inline constexpr std::string_view kFailed = "failed";
inline constexpr std::string_view kControlPlaneStarted = "control_plane_started";
inline constexpr std::string_view kControlPlaneFinished = "control_plane_finished";
inline constexpr std::string_view kWorkersFinished = "workers_finished";
inline constexpr std::string_view kHealthCheck = "health_check";
inline constexpr std::string_view kPreHealthCheck = "pre_health_check";
inline constexpr std::string_view kValidationFailed = "validation_failed";
}  // namespace event

// The description of an event for `config` (the reference's texts; Delayed and Failed
// pick theirs from the first condition still False of the newest history entry).
std::string DescribeEvent(std::string_view event, const UpgradeConfig& config, std::string_view detail = "");

// The upgrade-policy state of a remote policy service an event moves to ("" when the
// event is a service-log-only one), and whether a policy may move from `from` to `to`.
std::string PolicyStateFor(std::string_view event);
bool PolicyTransitionAllowed(std::string_view from, std::string_view to);

class NotificationCenter {
 public:
  NotificationCenter(StateStore& store, GaugeTable& metrics, std::vector<std::unique_ptr<Notifier>> notifiers)
      : store_(store), metrics_(metrics), notifiers_(std::move(notifiers)) {}

  // OK when sent now or already sent before; an error (to retry) when a send failed.
  Status Notify(const UpgradeConfig& config, std::string_view event, TimePoint now, std::string_view detail = "");
  // Whether a send leaves this process (webhooks, a policy service), and whether every
  // receiver has this event already (the ledger, read locally: no receiver is asked).
  bool Remote() const { return !notifiers_.empty(); }
  Result<bool> Sent(const UpgradeConfig& config, std::string_view event);

 private:
  StateStore& store_;
  GaugeTable& metrics_;
  std::vector<std::unique_ptr<Notifier>> notifiers_;
};

}  // namespace cincinnati::upgrade
