// WebhookNotifier: the Notifier port as one webhook: POST {url} with a JSON body
//   {"kind":"UpgradeNotification","id":..., "cluster":..., "event":..., "version":...,
//    "description":..., "time":...}
// and Content-Type application/json, an optional bearer token file and extra headers.
// Any 2xx answer is success; anything else (3xx after redirects, 4xx, 5xx, no answer)
// is an error naming the URL and the status. Retries are the caller's (notifications.h
// keeps the ledger and the backoff).
//
// Thread-safe (no mutable state); never throws.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "operator/ports.h"

namespace cincinnati::upgrade {

struct WebhookSettings {
  std::string url;
  std::string token_file;
  std::string ca_path;
  std::vector<std::string> headers;  // "Name: value"
  std::chrono::milliseconds timeout{10000};
};

class WebhookNotifier : public Notifier {
 public:
  explicit WebhookNotifier(WebhookSettings settings) : settings_(std::move(settings)) {}
  Status Send(const Notification& notification) override;

 private:
  WebhookSettings settings_;
};

std::string NotificationJson(const Notification& notification);

}  // namespace cincinnati::upgrade
