#include "operator/webhook_notifier.h"

#include "kube/json_value.h"
#include "operator/http_call.h"

namespace cincinnati::upgrade {

using kube::JsonValue;

std::string NotificationJson(const Notification& n) {
  return kube::WriteJson(JsonValue::Object({{"kind", JsonValue::String("UpgradeNotification")},
                                             {"id", JsonValue::String(n.id)},
                                             {"cluster", JsonValue::String(n.cluster)},
                                             {"event", JsonValue::String(n.event)},
                                             {"version", JsonValue::String(n.version)},
                                             {"description", JsonValue::String(n.description)},
                                             {"time", JsonValue::String(n.time)}}));
}

Status WebhookNotifier::Send(const Notification& notification) {
  HttpPeer peer{settings_.token_file, settings_.ca_path, settings_.timeout, settings_.headers};
  return CallPeer(peer, "POST", settings_.url, NotificationJson(notification)).status();
}

}  // namespace cincinnati::upgrade
