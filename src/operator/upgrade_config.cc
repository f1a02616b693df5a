#include "operator/upgrade_config.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "kube/yaml_json.h"

namespace cincinnati::upgrade {
namespace {
using kube::JsonObject;
using kube::JsonArray;
using kube::FindMember;
using kube::TextOf;
using kube::IntegerOf;
using kube::BoolOf;
using kube::MembersOf;
using kube::SetMember;
using kube::ItemsOf;

// Reads the members of one JSON object, naming `path` in every error.
class Fields {
 public:
  Fields(const JsonValue& object, std::string path) : object_(object), path_(std::move(path)) {}

  Status String(std::string_view key, std::string& out, bool required = false) const {
    const JsonValue* v = FindMember(object_, key);
    if (!v || v->is_null()) return required ? Missing(key) : Status::OK();
    if (!v->is_string()) return Wrong(key, "a string");
    out = TextOf(*v);
    return Status::OK();
  }
  Status Bool(std::string_view key, bool& out) const {
    const JsonValue* v = FindMember(object_, key);
    if (!v || v->is_null()) return Status::OK();
    if (!v->is_bool()) return Wrong(key, "a boolean");
    out = BoolOf(*v);
    return Status::OK();
  }
  Status Int32(std::string_view key, int32_t& out, bool required) const {
    const JsonValue* v = FindMember(object_, key);
    if (!v || v->is_null()) return required ? Missing(key) : Status::OK();
    auto n = v->is_number() ? IntegerOf(*v) : std::nullopt;
    if (!n || *n < INT32_MIN || *n > INT32_MAX) return Wrong(key, "a 32-bit integer");
    out = static_cast<int32_t>(*n);
    return Status::OK();
  }
  // nullptr when absent or null; an error when present but not an object/array.
  Result<const JsonValue*> Object(std::string_view key, bool required = false) const {
    const JsonValue* v = FindMember(object_, key);
    if (!v || v->is_null()) {
      if (required) return Missing(key);
      return static_cast<const JsonValue*>(nullptr);
    }
    if (!v->is_object()) return Wrong(key, "an object");
    return v;
  }
  Result<const JsonValue*> Array(std::string_view key) const {
    const JsonValue* v = FindMember(object_, key);
    if (!v || v->is_null()) return static_cast<const JsonValue*>(nullptr);
    if (!v->is_array()) return Wrong(key, "a list");
    return v;
  }
  std::string Path(std::string_view key) const { return path_.empty() ? std::string(key) : path_ + "." + std::string(key); }

 private:
  Status Missing(std::string_view key) const { return Status::InvalidArgument(Path(key) + ": Required value"); }
  Status Wrong(std::string_view key, std::string_view what) const {
    return Status::InvalidArgument(fmt::format("{}: must be {}", Path(key), what));
  }
  const JsonValue& object_;
  std::string path_;
};

Status ReadCondition(const JsonValue& v, const std::string& path, UpgradeCondition& c) {
  if (!v.is_object()) return Status::InvalidArgument(path + ": must be an object");
  Fields f(v, path);
  CINCINNATI_RETURN_IF_ERROR(f.String("type", c.type, true));
  CINCINNATI_RETURN_IF_ERROR(f.String("status", c.status, true));
  if (c.status != "True" && c.status != "False" && c.status != "Unknown") {
    return Status::InvalidArgument(fmt::format("{}.status: Unsupported value: \"{}\": supported values: \"True\", \"False\", \"Unknown\"", path, c.status));
  }
  CINCINNATI_RETURN_IF_ERROR(f.String("reason", c.reason));
  CINCINNATI_RETURN_IF_ERROR(f.String("message", c.message));
  CINCINNATI_RETURN_IF_ERROR(f.String("startTime", c.start_time));
  CINCINNATI_RETURN_IF_ERROR(f.String("completeTime", c.complete_time));
  CINCINNATI_RETURN_IF_ERROR(f.String("lastProbeTime", c.last_probe_time));
  return f.String("lastTransitionTime", c.last_transition_time);
}

Status ReadHistory(const JsonValue& v, const std::string& path, UpgradeHistory& h) {
  if (!v.is_object()) return Status::InvalidArgument(path + ": must be an object");
  Fields f(v, path);
  CINCINNATI_RETURN_IF_ERROR(f.String("version", h.version));
  CINCINNATI_RETURN_IF_ERROR(f.String("precedingVersion", h.preceding_version));
  std::string phase;
  CINCINNATI_RETURN_IF_ERROR(f.String("phase", phase, true));
  auto parsed = ParsePhase(phase);
  if (!parsed) {
    return Status::InvalidArgument(fmt::format(
        "{}.phase: Unsupported value: \"{}\": supported values: \"New\", \"Pending\", \"Upgrading\", \"Upgraded\", \"Failed\"", path, phase));
  }
  h.phase = *parsed;
  CINCINNATI_RETURN_IF_ERROR(f.String("startTime", h.start_time));
  CINCINNATI_RETURN_IF_ERROR(f.String("completeTime", h.complete_time));
  CINCINNATI_RETURN_IF_ERROR(f.String("workerStartTime", h.worker_start_time));
  CINCINNATI_RETURN_IF_ERROR(f.String("workerCompleteTime", h.worker_complete_time));
  CINCINNATI_ASSIGN_OR_RETURN(const JsonValue* conditions, f.Array("conditions"));
  if (conditions) {
    for (size_t i = 0; i < ItemsOf(*conditions).size(); ++i) {
      UpgradeCondition c;
      CINCINNATI_RETURN_IF_ERROR(ReadCondition(ItemsOf(*conditions)[i], fmt::format("{}.conditions[{}]", path, i), c));
      h.conditions.push_back(std::move(c));
    }
  }
  return Status::OK();
}

// A file people write is read strictly where a typo would otherwise pass unseen: an
// unknown key at the top or in spec is an error naming it and what the level holds
// (capacityReservaton would be dropped; upgradAt would read as "upgradeAt: Required
// value"). metadata and status may hold anything a cluster's copy of the object holds.
Status RefuseUnknown(const JsonValue& object, std::string_view path, std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : MembersOf(object)) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string names;
    for (std::string_view k : known) names += (names.empty() ? "" : ", ") + std::string(k);
    return Status::InvalidArgument(
        fmt::format("{}{}: unknown field (known fields: {})", path.empty() ? "" : std::string(path) + ".", key, names));
  }
  return Status::OK();
}

Status ReadSpec(const JsonValue& spec_json, UpgradeConfigSpec& spec, bool strict) {
  if (strict) {
    CINCINNATI_RETURN_IF_ERROR(
        RefuseUnknown(spec_json, "spec", {"type", "upgradeAt", "PDBForceDrainTimeout", "capacityReservation", "desired"}));
  }
  Fields f(spec_json, "spec");
  std::string type;
  CINCINNATI_RETURN_IF_ERROR(f.String("type", type, true));
  if (type == "OSD") {
    spec.type = UpgradeType::kOSD;
  } else if (type == "ARO") {
    spec.type = UpgradeType::kARO;
  } else {
    return Status::InvalidArgument(fmt::format("spec.type: Unsupported value: \"{}\": supported values: \"OSD\", \"ARO\"", type));
  }
  CINCINNATI_RETURN_IF_ERROR(f.String("upgradeAt", spec.upgrade_at, true));
  CINCINNATI_RETURN_IF_ERROR(f.Int32("PDBForceDrainTimeout", spec.pdb_force_drain_timeout, true));
  if (spec.pdb_force_drain_timeout < 0) {
    return Status::InvalidArgument(fmt::format("spec.PDBForceDrainTimeout: Invalid value: {}: must be greater than or equal to 0",
                                               spec.pdb_force_drain_timeout));
  }
  CINCINNATI_RETURN_IF_ERROR(f.Bool("capacityReservation", spec.capacity_reservation));
  CINCINNATI_ASSIGN_OR_RETURN(const JsonValue* desired, f.Object("desired", true));
  if (strict) CINCINNATI_RETURN_IF_ERROR(RefuseUnknown(*desired, "spec.desired", {"version", "channel", "image"}));
  Fields d(*desired, "spec.desired");
  CINCINNATI_RETURN_IF_ERROR(d.String("version", spec.desired.version));
  CINCINNATI_RETURN_IF_ERROR(d.String("channel", spec.desired.channel));
  return d.String("image", spec.desired.image);
}

void PutString(JsonValue& object, const char* key, const std::string& value, bool omit_empty = true) {
  if (!omit_empty || !value.empty()) SetMember(object, key, JsonValue(value));
}

}  // namespace

std::string_view UpgradeTypeName(UpgradeType type) { return type == UpgradeType::kARO ? "ARO" : "OSD"; }

std::string_view PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kNew: return "New";
    case Phase::kPending: return "Pending";
    case Phase::kUpgrading: return "Upgrading";
    case Phase::kUpgraded: return "Upgraded";
    case Phase::kFailed: return "Failed";
  }
  return "Unknown";
}

std::optional<Phase> ParsePhase(std::string_view name) {
  for (Phase p : {Phase::kNew, Phase::kPending, Phase::kUpgrading, Phase::kUpgraded, Phase::kFailed}) {
    if (PhaseName(p) == name) return p;
  }
  return std::nullopt;
}

bool PhaseMoveAllowed(Phase from, Phase to) {
  if (from == to) return true;
  switch (to) {
    case Phase::kPending: return from == Phase::kNew;
    case Phase::kUpgrading: return from == Phase::kNew || from == Phase::kPending;
    case Phase::kUpgraded: return from == Phase::kUpgrading;
    case Phase::kFailed: return from == Phase::kPending || from == Phase::kUpgrading;
    case Phase::kNew: return false;
  }
  return false;
}

Status UpgradeHistory::MoveTo(Phase to) {
  if (PhaseMoveAllowed(phase, to)) {
    phase = to;
    return Status::OK();
  }
  const std::string message = fmt::format("the upgrade to {} cannot move from {} to {}: not an allowed move (a bug in the operator)",
                                          version, PhaseName(phase), PhaseName(to));
  spdlog::error("{}", message);
  return Status::Internal(message);
}

const UpgradeCondition* UpgradeHistory::FindCondition(std::string_view type) const {
  for (const auto& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

void UpgradeHistory::SetCondition(UpgradeCondition condition, const std::string& now) {
  condition.last_probe_time = now;
  for (auto& c : conditions) {
    if (c.type != condition.type) continue;
    condition.last_transition_time = c.status == condition.status && !c.last_transition_time.empty() ? c.last_transition_time : now;
    c = std::move(condition);
    return;
  }
  condition.last_transition_time = now;
  conditions.insert(conditions.begin(), std::move(condition));
}

UpgradeHistory* UpgradeConfig::FindHistory(std::string_view version) {
  for (auto& h : history) {
    if (h.version == version) return &h;
  }
  return nullptr;
}

const UpgradeHistory* UpgradeConfig::FindHistory(std::string_view version) const {
  return const_cast<UpgradeConfig*>(this)->FindHistory(version);
}

void UpgradeConfig::SetHistory(UpgradeHistory entry) {
  if (UpgradeHistory* h = FindHistory(entry.version)) {
    *h = std::move(entry);
  } else {
    history.insert(history.begin(), std::move(entry));
  }
}

namespace {

Result<UpgradeConfig> FromJson(const JsonValue& document, std::string_view what, bool strict) {
  auto in = [&](Status s) { return s.WithContext(std::string(what)); };
  if (!document.is_object()) return in(Status::InvalidArgument("the document must be an object (an UpgradeConfig)"));
  if (strict) {
    if (Status s = RefuseUnknown(document, "", {"apiVersion", "kind", "metadata", "spec", "status"}); !s.ok()) return in(s);
  }
  UpgradeConfig config;
  Fields top(document, "");
  std::string api_version, kind;
  if (Status s = top.String("apiVersion", api_version); !s.ok()) return in(s);
  if (Status s = top.String("kind", kind); !s.ok()) return in(s);
  if (!api_version.empty() && api_version != kApiVersion) {
    return in(Status::InvalidArgument(fmt::format("apiVersion: must be \"{}\", not \"{}\"", kApiVersion, api_version)));
  }
  if (!kind.empty() && kind != kKind) return in(Status::InvalidArgument(fmt::format("kind: must be \"{}\", not \"{}\"", kKind, kind)));
  auto metadata = top.Object("metadata");
  if (!metadata.ok()) return in(metadata.status());
  if (*metadata) {
    Fields m(**metadata, "metadata");
    if (Status s = m.String("name", config.name); !s.ok()) return in(s);
    auto labels = m.Object("labels");
    if (!labels.ok()) return in(labels.status());
    if (*labels) {
      Fields l(**labels, "metadata.labels");
      if (Status s = l.String("cluster", config.cluster); !s.ok()) return in(s);
    }
  }
  auto spec = top.Object("spec", true);
  if (!spec.ok()) return in(spec.status());
  if (Status s = ReadSpec(**spec, config.spec, strict); !s.ok()) return in(s);
  auto status = top.Object("status");
  if (!status.ok()) return in(status.status());
  if (*status) {
    auto history = Fields(**status, "status").Array("history");
    if (!history.ok()) return in(history.status());
    if (*history) {
      for (size_t i = 0; i < ItemsOf(*(*history)).size(); ++i) {
        UpgradeHistory h;
        if (Status s = ReadHistory(ItemsOf(*(*history))[i], fmt::format("status.history[{}]", i), h); !s.ok()) return in(s);
        config.history.push_back(std::move(h));
      }
    }
  }
  return config;
}

}  // namespace

// Stored and exchanged documents are read as a Kubernetes client reads: fields this
// build does not know are ignored.
Result<UpgradeConfig> UpgradeConfigFromJson(const JsonValue& document, std::string_view what) {
  return FromJson(document, what, false);
}

Result<UpgradeConfig> ParseUpgradeConfigYaml(const std::string& text, std::string_view what) {
  CINCINNATI_ASSIGN_OR_RETURN(JsonValue document, kube::YamlToJson(text, std::string(what)));
  return FromJson(document, what, true);
}

JsonValue SpecToJson(const UpgradeConfigSpec& spec) {
  JsonValue desired = JsonObject();
  PutString(desired, "version", spec.desired.version);
  PutString(desired, "channel", spec.desired.channel);
  PutString(desired, "image", spec.desired.image);
  JsonValue out = JsonObject();
  SetMember(out, "type", JsonValue(std::string(UpgradeTypeName(spec.type))));
  SetMember(out, "upgradeAt", JsonValue(spec.upgrade_at));
  SetMember(out, "PDBForceDrainTimeout", JsonValue(int64_t(spec.pdb_force_drain_timeout)));
  if (spec.capacity_reservation) SetMember(out, "capacityReservation", JsonValue(true));
  SetMember(out, "desired", std::move(desired));
  return out;
}

JsonValue ToJson(const UpgradeConfig& config) {
  JsonArray history;
  for (const auto& h : config.history) {
    JsonArray conditions;
    for (const auto& c : h.conditions) {
      JsonValue cj = JsonObject();
      PutString(cj, "type", c.type, false);
      PutString(cj, "status", c.status, false);
      PutString(cj, "reason", c.reason);
      PutString(cj, "message", c.message);
      PutString(cj, "startTime", c.start_time);
      PutString(cj, "completeTime", c.complete_time);
      PutString(cj, "lastProbeTime", c.last_probe_time);
      PutString(cj, "lastTransitionTime", c.last_transition_time);
      conditions.push_back(std::move(cj));
    }
    JsonValue hj = JsonObject();
    PutString(hj, "version", h.version);
    PutString(hj, "precedingVersion", h.preceding_version);
    SetMember(hj, "phase", JsonValue(std::string(PhaseName(h.phase))));
    PutString(hj, "startTime", h.start_time);
    PutString(hj, "completeTime", h.complete_time);
    PutString(hj, "workerStartTime", h.worker_start_time);
    PutString(hj, "workerCompleteTime", h.worker_complete_time);
    SetMember(hj, "conditions", JsonValue(std::move(conditions)));
    history.push_back(std::move(hj));
  }
  JsonValue metadata = JsonObject({{"name", JsonValue(config.name)}});
  if (!config.cluster.empty()) {
    SetMember(metadata, "labels", JsonValue(JsonObject({{"cluster", JsonValue(config.cluster)}})));
  }
  JsonValue out = JsonObject();
  SetMember(out, "apiVersion", JsonValue(std::string(kApiVersion)));
  SetMember(out, "kind", JsonValue(std::string(kKind)));
  SetMember(out, "metadata", std::move(metadata));
  SetMember(out, "spec", SpecToJson(config.spec));
  SetMember(out, "status", JsonValue(JsonObject({{"history", JsonValue(std::move(history))}})));
  return out;
}

}  // namespace cincinnati::upgrade
