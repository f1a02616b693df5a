#include "operator/operator_config.h"

#include <fmt/format.h>

#include <algorithm>

#include "env/file_system.h"
#include "graph-data/file_reader.h"
#include "kube/yaml_json.h"

namespace cincinnati::upgrade {
namespace {
using kube::FindMember;
using kube::TextOf;
using kube::IntegerOf;
using kube::BoolOf;
using kube::MembersOf;
using kube::ItemsOf;

// One YAML mapping, read strictly: every key must be known, every value of its type.
class Section {
 public:
  Section(const JsonValue* object, std::string path) : object_(object), path_(std::move(path)) {}

  Status Check(std::initializer_list<std::string_view> known) const {
    if (!object_) return Status::OK();
    if (!object_->is_object()) return Status::InvalidArgument(path_ + ": must be a mapping");
    for (const auto& [key, value] : MembersOf(*object_)) {
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        std::string list;
        for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
        return Status::InvalidArgument(fmt::format("{}: unknown key (known: {})", Path(key), list));
      }
    }
    return Status::OK();
  }
  Section Child(std::string_view key) const { return Section(Find(key), Path(key)); }
  Status String(std::string_view key, std::string& out) const {
    const JsonValue* v = Find(key);
    if (!v || v->is_null()) return Status::OK();
    if (!v->is_string()) return Status::InvalidArgument(Path(key) + ": must be a string");
    out = TextOf(*v);
    return Status::OK();
  }
  // A whole number within [min, max].
  Status Int(std::string_view key, int& out, int min, int max, std::string_view unit) const {
    const JsonValue* v = Find(key);
    if (!v || v->is_null()) return Status::OK();
    auto n = v->is_number() ? IntegerOf(*v) : std::nullopt;
    if (!n || *n < min || *n > max) {
      return Status::InvalidArgument(fmt::format("{}: must be a whole number of {} from {} to {}", Path(key), unit, min, max));
    }
    out = static_cast<int>(*n);
    return Status::OK();
  }
  Status Strings(std::string_view key, std::vector<std::string>& out) const {
    const JsonValue* v = Find(key);
    if (!v || v->is_null()) return Status::OK();
    if (!v->is_array()) return Status::InvalidArgument(Path(key) + ": must be a list of strings");
    out.clear();
    for (size_t i = 0; i < ItemsOf(*v).size(); ++i) {
      if (!ItemsOf(*v)[i].is_string()) return Status::InvalidArgument(fmt::format("{}[{}]: must be a string", Path(key), i));
      out.push_back(TextOf(ItemsOf(*v)[i]));
    }
    return Status::OK();
  }
  const JsonValue* Find(std::string_view key) const { return object_ && object_->is_object() ? FindMember(*object_, key) : nullptr; }
  std::string Path(std::string_view key) const { return path_.empty() ? std::string(key) : path_ + "." + std::string(key); }

 private:
  const JsonValue* object_;
  std::string path_;
};

Status ReadEndpoint(const Section& s, Endpoint& out) {
  CINCINNATI_RETURN_IF_ERROR(s.Check({"url", "tokenFile", "caDir", "clusterLabel"}));
  CINCINNATI_RETURN_IF_ERROR(s.String("clusterLabel", out.cluster_label));
  CINCINNATI_RETURN_IF_ERROR(s.String("url", out.url));
  CINCINNATI_RETURN_IF_ERROR(s.String("tokenFile", out.token_file));
  CINCINNATI_RETURN_IF_ERROR(s.String("caDir", out.ca_dir));
  if (!out.url.empty() && out.url.rfind("http://", 0) != 0 && out.url.rfind("https://", 0) != 0) {
    return Status::InvalidArgument(fmt::format("{}: \"{}\" is not an http:// or https:// URL", s.Path("url"), out.url));
  }
  return Status::OK();
}

Status ReadUpgradeType(const Section& top, OperatorConfig& c) {
  std::string type;
  CINCINNATI_RETURN_IF_ERROR(top.String("upgradeType", type));
  if (type == "ARO") {
    c.upgrade_type = UpgradeType::kARO;
  } else if (type.empty() || type == "OSD") {
    c.upgrade_type = UpgradeType::kOSD;
  } else {
    return Status::InvalidArgument(fmt::format("upgradeType: \"{}\" is not OSD or ARO", type));
  }
  return Status::OK();
}

// Where the UpgradeConfigs come from.
Status ReadConfigManager(const Section& cm, OperatorConfig& c) {
  CINCINNATI_RETURN_IF_ERROR(cm.Check({"source", "localConfigDir", "localConfigName", "ocmBaseUrl", "ocmTokenFile", "watchInterval"}));
  CINCINNATI_RETURN_IF_ERROR(cm.String("ocmTokenFile", c.ocm_token_file));
  CINCINNATI_RETURN_IF_ERROR(cm.String("source", c.source));
  std::transform(c.source.begin(), c.source.end(), c.source.begin(), [](unsigned char ch) { return std::toupper(ch); });
  if (c.source != "LOCAL" && c.source != "OCM") {
    return Status::InvalidArgument(fmt::format("configManager.source: \"{}\" is not LOCAL or OCM", c.source));
  }
  CINCINNATI_RETURN_IF_ERROR(cm.String("localConfigDir", c.local_config_dir));
  CINCINNATI_RETURN_IF_ERROR(cm.String("ocmBaseUrl", c.ocm_base_url));
  CINCINNATI_RETURN_IF_ERROR(cm.Int("watchInterval", c.watch_interval_minutes, 1, 7 * 24 * 60, "minutes"));
  if (c.source == "OCM" && c.ocm_base_url.empty()) {
    return Status::InvalidArgument("configManager.ocmBaseUrl: Required value (configManager.source is OCM)");
  }
  return Status::OK();
}

// The upgrade's times: the control plane's, the window's, each node's drain.
Status ReadTimes(const Section& top, OperatorConfig& c) {
  Section maintenance = top.Child("maintenance");
  CINCINNATI_RETURN_IF_ERROR(maintenance.Check({"controlPlaneTime", "ignoredAlerts"}));
  CINCINNATI_RETURN_IF_ERROR(maintenance.Int("controlPlaneTime", c.control_plane_minutes, 1, 24 * 60, "minutes"));
  Section ignored = maintenance.Child("ignoredAlerts");
  CINCINNATI_RETURN_IF_ERROR(ignored.Check({"controlPlaneCriticals"}));
  CINCINNATI_RETURN_IF_ERROR(ignored.Strings("controlPlaneCriticals", c.control_plane_criticals));

  Section window = top.Child("upgradeWindow");
  CINCINNATI_RETURN_IF_ERROR(window.Check({"delayTrigger", "timeOut"}));
  CINCINNATI_RETURN_IF_ERROR(window.Int("delayTrigger", c.delay_trigger_minutes, 0, 7 * 24 * 60, "minutes"));
  CINCINNATI_RETURN_IF_ERROR(window.Int("timeOut", c.upgrade_window_minutes, 0, 7 * 24 * 60, "minutes"));

  Section drain = top.Child("nodeDrain");
  CINCINNATI_RETURN_IF_ERROR(drain.Check({"timeOut", "expectedNodeDrainTime", "disableDrainStrategies", "ignoredNamespacePatterns"}));
  CINCINNATI_RETURN_IF_ERROR(drain.Int("timeOut", c.node_drain_timeout_minutes, 1, 24 * 60, "minutes"));
  CINCINNATI_RETURN_IF_ERROR(drain.Int("expectedNodeDrainTime", c.expected_node_drain_minutes, 1, 24 * 60, "minutes"));
  return Status::OK();
}

// What is checked before an upgrade: alerts, outside dependencies, the update service.
Status ReadChecks(const Section& top, OperatorConfig& c) {
  Section health = top.Child("healthCheck");
  CINCINNATI_RETURN_IF_ERROR(health.Check({"ignoredCriticals", "ignoredNamespaces"}));
  CINCINNATI_RETURN_IF_ERROR(health.Strings("ignoredCriticals", c.ignored_criticals));
  CINCINNATI_RETURN_IF_ERROR(health.Strings("ignoredNamespaces", c.ignored_namespaces));

  Section ext = top.Child("extDependencyAvailabilityChecks");
  CINCINNATI_RETURN_IF_ERROR(ext.Check({"http"}));
  Section ext_http = ext.Child("http");
  CINCINNATI_RETURN_IF_ERROR(ext_http.Check({"urls", "timeout"}));
  CINCINNATI_RETURN_IF_ERROR(ext_http.Strings("urls", c.dependency_urls));
  CINCINNATI_RETURN_IF_ERROR(ext_http.Int("timeout", c.dependency_timeout_seconds, 1, 60, "seconds"));

  Section validation = top.Child("validation");
  CINCINNATI_RETURN_IF_ERROR(validation.Check({"cincinnati"}));
  if (const JsonValue* v = validation.Find("cincinnati"); v && !v->is_null()) {
    if (!v->is_bool()) return Status::InvalidArgument("validation.cincinnati: must be true or false");
    c.cincinnati_check = BoolOf(*v);
  }
  return Status::OK();
}

Status ReadFeatureGates(const Section& gates, OperatorConfig& c) {
  CINCINNATI_RETURN_IF_ERROR(gates.Check({"enabled"}));
  std::vector<std::string> enabled;
  CINCINNATI_RETURN_IF_ERROR(gates.Strings("enabled", enabled));
  c.pre_health_check_gate = std::find(enabled.begin(), enabled.end(), "PreHealthCheck") != enabled.end();
  return Status::OK();
}

bool IsHttpUrl(const std::string& url) { return url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0; }

Status ReadWebhooks(const Section& notifications, OperatorConfig& c) {
  CINCINNATI_RETURN_IF_ERROR(notifications.Check({"webhooks"}));
  const JsonValue* hooks = notifications.Find("webhooks");
  if (!hooks || hooks->is_null()) return Status::OK();
  if (!hooks->is_array()) return Status::InvalidArgument("notifications.webhooks: must be a list");
  for (size_t i = 0; i < ItemsOf(*hooks).size(); ++i) {
    Section w(&ItemsOf(*hooks)[i], fmt::format("notifications.webhooks[{}]", i));
    if (!ItemsOf(*hooks)[i].is_object()) return Status::InvalidArgument(w.Path("") + ": must be a mapping");
    CINCINNATI_RETURN_IF_ERROR(w.Check({"url", "tokenFile", "headers"}));
    WebhookConfig hook;
    CINCINNATI_RETURN_IF_ERROR(w.String("url", hook.url));
    CINCINNATI_RETURN_IF_ERROR(w.String("tokenFile", hook.token_file));
    CINCINNATI_RETURN_IF_ERROR(w.Strings("headers", hook.headers));
    if (!IsHttpUrl(hook.url)) {
      return Status::InvalidArgument(fmt::format("{}: \"{}\" is not an http:// or https:// URL", w.Path("url"), hook.url));
    }
    c.webhooks.push_back(std::move(hook));
  }
  return Status::OK();
}

Status ReadHooks(const Section& hooks, OperatorConfig& c) {
  CINCINNATI_RETURN_IF_ERROR(hooks.Check({"capacityReservation", "capacityRemoval", "drain", "timeout"}));
  CINCINNATI_RETURN_IF_ERROR(hooks.String("capacityReservation", c.capacity_hook));
  CINCINNATI_RETURN_IF_ERROR(hooks.String("capacityRemoval", c.capacity_removal_hook));
  CINCINNATI_RETURN_IF_ERROR(hooks.String("drain", c.drain_hook));
  CINCINNATI_RETURN_IF_ERROR(hooks.Int("timeout", c.hook_timeout_seconds, 1, 24 * 3600, "seconds"));
  return Status::OK();
}

Status ReadFleet(const Section& fleet, OperatorConfig& c) {
  CINCINNATI_RETURN_IF_ERROR(fleet.Check({"maxParallel", "waveLabel", "waves", "failureThreshold"}));
  CINCINNATI_RETURN_IF_ERROR(fleet.Int("maxParallel", c.max_parallel, 0, 100000, "clusters"));
  CINCINNATI_RETURN_IF_ERROR(fleet.String("waveLabel", c.wave_label));
  CINCINNATI_RETURN_IF_ERROR(fleet.Strings("waves", c.waves));
  CINCINNATI_RETURN_IF_ERROR(fleet.Int("failureThreshold", c.failure_threshold, 0, 100000, "failures"));
  if (!c.waves.empty() && c.wave_label.empty()) return Status::InvalidArgument("fleet.waveLabel: Required value (fleet.waves is set)");
  return Status::OK();
}

// The sections in the order their errors are reported.
Status ReadConfig(const JsonValue& doc, OperatorConfig& c) {
  Section top(&doc, "");
  CINCINNATI_RETURN_IF_ERROR(top.Check({"upgradeType", "configManager", "maintenance", "upgradeWindow", "nodeDrain", "healthCheck",
                                        "extDependencyAvailabilityChecks", "featureGate", "scale", "validation",
                                        "prometheus", "alertmanager", "notifications", "hooks", "fleet"}));
  CINCINNATI_RETURN_IF_ERROR(ReadUpgradeType(top, c));
  CINCINNATI_RETURN_IF_ERROR(ReadConfigManager(top.Child("configManager"), c));
  CINCINNATI_RETURN_IF_ERROR(ReadTimes(top, c));
  CINCINNATI_RETURN_IF_ERROR(ReadChecks(top, c));
  CINCINNATI_RETURN_IF_ERROR(ReadFeatureGates(top.Child("featureGate"), c));

  Section scale = top.Child("scale");
  CINCINNATI_RETURN_IF_ERROR(scale.Check({"timeOut", "extraMachinePools"}));
  CINCINNATI_RETURN_IF_ERROR(scale.Int("timeOut", c.scale_timeout_minutes, 1, 24 * 60, "minutes"));

  CINCINNATI_RETURN_IF_ERROR(ReadEndpoint(top.Child("prometheus"), c.prometheus));
  CINCINNATI_RETURN_IF_ERROR(ReadEndpoint(top.Child("alertmanager"), c.alertmanager));
  CINCINNATI_RETURN_IF_ERROR(ReadWebhooks(top.Child("notifications"), c));
  CINCINNATI_RETURN_IF_ERROR(ReadHooks(top.Child("hooks"), c));
  return ReadFleet(top.Child("fleet"), c);
}

}  // namespace

Result<OperatorConfig> ParseOperatorConfig(const std::string& yaml, const std::string& what) {
  OperatorConfig config;
  if (yaml.find_first_not_of(" \t\r\n") == std::string::npos) return config;
  CINCINNATI_ASSIGN_OR_RETURN(JsonValue doc, kube::YamlToJson(yaml, what));
  if (doc.is_null()) return config;
  if (Status s = ReadConfig(doc, config); !s.ok()) return s.WithContext(what);
  return config;
}

Result<OperatorConfig> LoadOperatorConfig(const std::string& path) {
  CINCINNATI_ASSIGN_OR_RETURN(std::string text, env::ReadFile(path, kMaxSettingsFileBytes));
  return ParseOperatorConfig(text, path);
}

}  // namespace cincinnati::upgrade
