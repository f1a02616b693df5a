// In-memory fakes of the upgrade operator's ports (operator/ports.h), for tests that
// drive its passes without a network: each records what it was asked and can be told to
// fail. Not thread-safe: the operator never reconciles one cluster twice at once, and
// the tests read them between passes.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kube/json_value.h"
#include "operator/ports.h"

namespace cincinnati::upgrade::fakes {

using std::chrono::seconds;

// The cluster's agent at 4.1.0 offering 4.1.1; told to update, it moves when the test
// says so (Progress, Complete).
class FakeAgent : public UpdateAgent {
 public:
  FakeAgent() {
    snapshot.cluster_id = "d5f1fb9d-5d29-4bb9-8fe3-4d26b7fd7a2a";
    snapshot.channel = "stable-4.1";
    snapshot.status_desired = {"4.1.0", "quay.io/ocp/release@sha256:410"};
    snapshot.history = {{"Completed", "4.1.0", "quay.io/ocp/release@sha256:410", "2026-01-01T00:00:00Z", "2026-01-01T00:30:00Z"}};
    snapshot.available_updates = {{"4.1.1", "quay.io/ocp/release@sha256:411"}};
    snapshot.components = {{"ingress", true, false}, {"dns", true, false}};
  }
  Result<AgentSnapshot> Snapshot() override {
    if (!reachable) return Status::IoError("agent https://prod-1.example: connection refused");
    return snapshot;
  }
  Status SetChannel(const std::string& channel) override {
    snapshot.channel = channel;
    return Status::OK();
  }
  Status SetDesiredUpdate(const std::string& version, const std::string& image) override {
    ++commands;
    if (refuse_commands) return Status::IoError("agent https://prod-1.example: HTTP 503");
    snapshot.desired_update = {version, image};
    return Status::OK();
  }
  void Progress() {
    snapshot.status_desired = {"4.1.1", "quay.io/ocp/release@sha256:411"};
    snapshot.history.insert(snapshot.history.begin(),
                            {"Partial", "4.1.1", "quay.io/ocp/release@sha256:411", "2026-01-01T12:00:00Z", ""});
  }
  void Complete() {
    snapshot.history.front().state = "Completed";
    snapshot.history.front().completion_time = "2026-01-01T12:40:00Z";
  }

  AgentSnapshot snapshot;
  bool reachable = true;
  bool refuse_commands = false;
  int commands = 0;
};

class FakeAlerts : public AlertSource {
 public:
  Result<std::vector<FiringAlert>> FiringCriticalAlerts() override {
    ++queries;
    if (down) return Status::IoError("prometheus: connection refused");
    return firing;
  }
  std::vector<FiringAlert> firing;
  bool down = false;
  int queries = 0;
};

class FakeWindows : public MaintenanceWindows {
 public:
  Result<std::vector<Silence>> List() override {
    if (down) return Status::IoError("alertmanager: connection refused");
    return silences;
  }
  Result<std::string> Create(const Silence& silence) override {
    if (down) return Status::IoError("alertmanager: connection refused");
    Silence s = silence;
    s.id = "silence-" + std::to_string(++created);
    s.state = "active";
    silences.push_back(s);
    return s.id;
  }
  Status Expire(const std::string& id) override {
    if (down) return Status::IoError("alertmanager: connection refused");
    for (auto& s : silences) {
      if (s.id == id) s.state = "expired";
    }
    return Status::OK();
  }
  int Active() const {
    int n = 0;
    for (const auto& s : silences) n += s.state == "active";
    return n;
  }
  std::vector<Silence> silences;
  bool down = false;
  int created = 0;
};

class RecordingNotifier : public Notifier {
 public:
  explicit RecordingNotifier(std::vector<Notification>& sent, bool& down) : sent_(sent), down_(down) {}
  Status Send(const Notification& n) override {
    if (down_) return Status::IoError("webhook https://hooks.example: HTTP 502");
    sent_.push_back(n);
    return Status::OK();
  }

 private:
  std::vector<Notification>& sent_;
  bool& down_;
};

class FakeHooks : public HookRunner {
 public:
  HookResult Run(const std::string& command, const std::map<std::string, std::string>& env, seconds) override {
    runs.push_back(command + " " + env.at("UPGRADE_STEP"));
    return {exit_code, "hook output"};
  }
  std::vector<std::string> runs;
  int exit_code = 0;
};

// The phase of each cluster's newest history entry ("" without one) in an operator's
// List() document, by cluster.
inline std::map<std::string, std::string> PhasesOf(const kube::JsonValue& list) {
  using kube::FindMember;
  using kube::ItemsOf;
  using kube::TextOf;
  std::map<std::string, std::string> phases;
  for (const auto& item : ItemsOf(*FindMember(list, "items"))) {
    const kube::JsonValue* history = FindMember(item, "status") ? FindMember(*FindMember(item, "status"), "history") : nullptr;
    phases[TextOf(*FindMember(*FindMember(*FindMember(item, "metadata"), "labels"), "cluster"))] =
        history && history->is_array() && !ItemsOf(*history).empty() ? TextOf(*FindMember(ItemsOf(*history)[0], "phase")) : "";
  }
  return phases;
}

}  // namespace cincinnati::upgrade::fakes
