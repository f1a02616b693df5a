// AlertmanagerWindows: the MaintenanceWindows port over a real Alertmanager's v2 API:
// GET {url}/api/v2/silences, POST {url}/api/v2/silences (the new silenceID is returned),
// DELETE {url}/api/v2/silence/{id} (expires it). Times are RFC 3339 UTC. A bearer token
// is read from `token_file` on every request when configured.
//
// Thread-safe (no mutable state); never throws; errors name the URL and the answer.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "operator/ports.h"

namespace cincinnati::upgrade {

struct AlertmanagerSettings {
  std::string url;  // e.g. http://127.0.0.1:9093
  std::string token_file;
  std::string ca_path;
  std::chrono::milliseconds timeout{10000};
};

class AlertmanagerWindows : public MaintenanceWindows {
 public:
  explicit AlertmanagerWindows(AlertmanagerSettings settings) : settings_(std::move(settings)) {}
  Result<std::vector<Silence>> List() override;
  Result<std::string> Create(const Silence& silence) override;
  Status Expire(const std::string& id) override;

 private:
  AlertmanagerSettings settings_;
};

// The silences of a GET /api/v2/silences answer (exposed for tests and fuzzing).
Result<std::vector<Silence>> ReadSilences(std::string_view body);

}  // namespace cincinnati::upgrade
