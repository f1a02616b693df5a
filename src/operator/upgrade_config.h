// UpgradeConfig: the managed-upgrade operator's `upgrade.managed.openshift.io/v1alpha1`
// object for one cluster, its JSON/YAML form with the schema's field names verbatim,
// and the MUO's bookkeeping rules (conditions are
// prepended when new and replaced in place otherwise; history is keyed by version,
// newest first).
//
// Times are RFC 3339 strings in UTC ("2024-06-20T12:00:00Z"), as Kubernetes writes them;
// an empty string is an unset time. Plain data: copy freely; not synchronized. Parsing
// is total: a bad document is an error naming the file and the field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "kube/json_value.h"

namespace cincinnati::upgrade {

using kube::JsonValue;

inline constexpr std::string_view kApiVersion = "upgrade.managed.openshift.io/v1alpha1";
inline constexpr std::string_view kKind = "UpgradeConfig";

enum class UpgradeType { kOSD, kARO };
std::string_view UpgradeTypeName(UpgradeType type);

enum class Phase { kNew, kPending, kUpgrading, kUpgraded, kFailed };
std::string_view PhaseName(Phase phase);
std::optional<Phase> ParsePhase(std::string_view name);

// The moves of a history entry's phase, as the managed-upgrade operator makes them
// (reconciler.h says when):
//   New -> Pending                  the next pass validates it
//   New | Pending -> Upgrading      the upgrade starts, or the agent is there already
//   Pending | Upgrading -> Failed   not commanded within its window
//   Upgrading -> Upgraded           every step done
// Staying in a phase is no move and always allowed. Upgraded and Failed are final: a
// new desired version gets an entry of its own.
bool PhaseMoveAllowed(Phase from, Phase to);

struct Desired {
  std::string version;
  std::string channel;
  std::string image;  // by digest; when set it wins over channel + version
  bool operator==(const Desired&) const = default;
};

struct UpgradeConfigSpec {
  UpgradeType type = UpgradeType::kOSD;
  std::string upgrade_at;               // RFC 3339; validated in phase Pending, not at parse
  int32_t pdb_force_drain_timeout = 0;  // minutes, >= 0
  Desired desired;
  bool capacity_reservation = false;
  bool operator==(const UpgradeConfigSpec&) const = default;
};

struct UpgradeCondition {
  std::string type;
  std::string status;  // "True", "False", "Unknown"
  std::string reason;
  std::string message;
  std::string start_time;
  std::string complete_time;
  std::string last_probe_time;
  std::string last_transition_time;
  bool operator==(const UpgradeCondition&) const = default;
};

struct UpgradeHistory {
  std::string version;
  std::string preceding_version;
  Phase phase = Phase::kNew;
  std::vector<UpgradeCondition> conditions;  // newest-added first
  std::string start_time;
  std::string complete_time;
  std::string worker_start_time;
  std::string worker_complete_time;
  bool operator==(const UpgradeHistory&) const = default;

  // Every change of `phase` goes through here: a move the table does not allow leaves
  // the phase, is logged, and is an Internal error naming both phases (a bug).
  Status MoveTo(Phase to);

  const UpgradeCondition* FindCondition(std::string_view type) const;
  // As in the MUO: absent ⇒ prepended; present ⇒ replaced in place, lastTransitionTime
  // kept when the status is unchanged; lastProbeTime always `now`.
  void SetCondition(UpgradeCondition condition, const std::string& now);
};

struct UpgradeConfig {
  std::string name = "managed-upgrade-config";
  std::string cluster;  // the fleet's cluster name this config is for
  UpgradeConfigSpec spec;
  std::vector<UpgradeHistory> history;  // newest first
  bool operator==(const UpgradeConfig&) const = default;

  UpgradeHistory* FindHistory(std::string_view version);
  const UpgradeHistory* FindHistory(std::string_view version) const;
  // Replaces the entry with the same version in place, or prepends it.
  void SetHistory(UpgradeHistory entry);
};

// `what` names errors' source; the status is optional. YAML is a file: unknown keys err.
Result<UpgradeConfig> UpgradeConfigFromJson(const JsonValue& document, std::string_view what);
Result<UpgradeConfig> ParseUpgradeConfigYaml(const std::string& text, std::string_view what);
JsonValue ToJson(const UpgradeConfig& config);
JsonValue SpecToJson(const UpgradeConfigSpec& spec);

}  // namespace cincinnati::upgrade
