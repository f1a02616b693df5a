// HttpUpdateAgent: the UpdateAgent port over our agent's API (the CVO's ClusterVersion
// and ClusterOperators, agent_api.h): GET .../clusterversions/version and
// .../clusteroperators for a snapshot, JSON merge-PATCH of spec.channel and
// spec.desiredUpdate to command it. A bearer token is read from `token_file` on every
// request when one is configured (rotated tokens work without a restart).
//
// The worker pool is the component whose status.extension reports machineCount and
// updatedMachineCount (the machine-config role of `cincinnati component --machines`);
// one named "machine-config" wins when several do.
//
// Thread-safe (no mutable state); never throws; errors name the agent's URL.
//
// Watch() uses the agent's watch of its ClusterVersion (one event, then the watch ends)
// so that an operator hears of a change at once without polling. A watch that breaks
// (the connection fails or resets, the agent answers 5xx: it hands over to its successor
// during its own update) is opened again at once, then after 50 ms doubling to 2 s
// between tries (LongPolls' delay, no thread), from the same resourceVersion until the
// watch's time is up: the agent answers a watch at once when its object moved meanwhile,
// so a change hidden by the break is reported as soon as the agent is back.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "http/long_polls.h"
#include "operator/ports.h"

namespace cincinnati::upgrade {

struct AgentEndpoint {
  std::string url;         // e.g. http://127.0.0.1:9099 (the agent's API root)
  std::string token_file;  // empty: no Authorization header
  std::string ca_path;     // extra CA certificates (directory), empty: system roots
  std::chrono::milliseconds timeout{10000};
  http::LongPolls* watches = nullptr;  // where Watch() waits; null: no watch
};

class HttpUpdateAgent : public UpdateAgent {
 public:
  explicit HttpUpdateAgent(AgentEndpoint endpoint) : endpoint_(std::move(endpoint)) {}
  Result<AgentSnapshot> Snapshot() override;
  Status SetChannel(const std::string& channel) override;
  Status SetDesiredUpdate(const std::string& version, const std::string& image) override;
  // GET .../clusterversions/version?watch=true&resourceVersion=N&timeoutSeconds=T on
  // `watches` (agent_api.h); an answer that is not a watch event (an agent without
  // watches answers the plain object) is a change when its resourceVersion is not N.
  // `done(false)`: the watch's time ran out, or it stayed broken that long.
  bool Watch(int64_t seen, std::chrono::seconds timeout, std::function<void(bool changed)> done) override;

  static constexpr std::chrono::milliseconds kFirstBackoff{50};
  static constexpr std::chrono::milliseconds kLongestBackoff{2000};

 private:
  struct WatchAttempt;
  static bool Try(std::shared_ptr<WatchAttempt> attempt, std::chrono::milliseconds delay);
  AgentEndpoint endpoint_;
};

// The snapshot of a ClusterVersion document and a ClusterOperatorList document (exposed
// for tests and fuzzing); total: bad JSON or a wrong shape is an error naming the field.
Result<AgentSnapshot> ReadAgentSnapshot(std::string_view cluster_version_json, std::string_view operators_json);

}  // namespace cincinnati::upgrade
