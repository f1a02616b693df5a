#include "operator/webhook_notifier.h"

#include "kube/json_value.h"
#include "operator/http_call.h"

namespace cincinnati::upgrade {

using kube::JsonValue;
using kube::JsonObject;

std::string NotificationJson(const Notification& n) {
  return kube::WriteJson(JsonValue(JsonObject({{"kind", JsonValue("UpgradeNotification")},
                                             {"id", JsonValue(n.id)},
                                             {"cluster", JsonValue(n.cluster)},
                                             {"event", JsonValue(n.event)},
                                             {"version", JsonValue(n.version)},
                                             {"description", JsonValue(n.description)},
                                             {"time", JsonValue(n.time)}})));
}

Status WebhookNotifier::Send(const Notification& notification) {
  HttpPeer peer{settings_.token_file, settings_.ca_path, settings_.timeout, settings_.headers};
  return CallPeer(peer, "POST", settings_.url, NotificationJson(notification)).status();
}

}  // namespace cincinnati::upgrade
