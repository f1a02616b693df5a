// Validation of an UpgradeConfig's desired release (the MUO's pkg/validation rules),
// run in phase Pending on every pass, with the reference's messages verbatim; and the
// helpers every step shares: the cluster's current version, whether the update has been
// commanded ("commenced"), whether it completed, and channel inference
// (<group>-<major>.<minor>, an EUS channel rounds an odd minor up).
//
// Pure functions of their inputs (the ports are called, never stored); never throw.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "operator/ports.h"
#include "operator/upgrade_config.h"

namespace cincinnati::upgrade {

struct ValidationResult {
  bool valid = false;
  bool available_update = false;
  bool is_error = false;  // an error (the pass is retried with backoff), not only invalid
  std::string message;
};

struct ValidationPorts {
  ReleaseResolver* resolver = nullptr;  // image mode (version read from the image); null: an error
  GraphClient* graph = nullptr;         // checks a channel change against the graph when `cincinnati_check`
  bool cincinnati_check = false;        // validation.cincinnati
};

// May rewrite config.spec.desired.version from the image (image mode) and rename the New
// history entry accordingly.
ValidationResult ValidateDesired(UpgradeConfig& config, const AgentSnapshot& agent, const ValidationPorts& ports);

// The version of the Completed agent-history entry with the latest completion time.
Result<std::string> CurrentVersion(const AgentSnapshot& agent);

// Image mode: the agent's spec.desiredUpdate.image is the desired image; channel+version
// mode: its version is the desired version. Neither mode: an error.
Result<bool> HasUpgradeCommenced(const UpgradeConfig& config, const AgentSnapshot& agent);
// The agent's history has the desired version Completed.
bool HasUpgradeCompleted(const UpgradeConfig& config, const AgentSnapshot& agent);

// "stable-4.13" and 4.14.2 -> "stable-4.14"; "eus-4.12" and 4.13.1 -> "eus-4.14"; an
// empty or unrecognised current channel gives group "stable".
std::string InferChannel(std::string_view current_channel, std::string_view desired_version);

// precedingVersion of a new history entry: when the agent already targets the desired version, the newest other Completed version of its history, else its desired version.
std::string PrecedingVersion(const UpgradeConfig& config, const AgentSnapshot& agent);

// Parses an image pull spec the way the MUO's check does (image mode): registry,
// repository, name and digest must all be there. An http:// or https:// prefix is
// allowed (our registries on 127.0.0.1).
Status CheckImagePullSpec(std::string_view image);

class HttpGraphClient : public GraphClient {
 public:
  explicit HttpGraphClient(std::string arch = "") : arch_(std::move(arch)) {}
  Result<std::vector<std::string>> Targets(const AgentSnapshot& agent, const std::string& channel,
                                           const std::string& version) override;

 private:
  std::string arch_;
};

}  // namespace cincinnati::upgrade
