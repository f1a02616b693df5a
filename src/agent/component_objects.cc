#include "agent/component_objects.h"

#include <fmt/format.h>

#include <algorithm>

namespace cincinnati::agent {

using kube::MergePatch;
using kube::WriteJson;
using kube::JsonObject;
using kube::FindMember;
using kube::TextOf;
using kube::MembersOf;
using kube::SetMember;
using kube::ItemsOf;
namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string ConditionStatus(const JsonValue& object, std::string_view type) {
  const JsonValue* status = FindMember(object, "status");
  const JsonValue* conditions = status ? FindMember(*status, "conditions") : nullptr;
  if (!conditions || !conditions->is_array()) return "";
  for (const auto& c : ItemsOf(*conditions)) {
    const JsonValue* t = FindMember(c, "type");
    const JsonValue* s = FindMember(c, "status");
    if (t && t->is_string() && TextOf(*t) == type && s && s->is_string()) return TextOf(*s);
  }
  return "";
}

// name -> version pairs of a ClusterOperator's status.versions.
std::vector<std::pair<std::string, std::string>> Versions(const JsonValue& object) {
  std::vector<std::pair<std::string, std::string>> out;
  const JsonValue* status = FindMember(object, "status");
  const JsonValue* versions = status ? FindMember(*status, "versions") : nullptr;
  if (!versions || !versions->is_array()) return out;
  for (const auto& v : ItemsOf(*versions)) {
    const JsonValue* n = FindMember(v, "name");
    const JsonValue* ver = FindMember(v, "version");
    if (n && n->is_string() && ver && ver->is_string()) out.emplace_back(TextOf(*n), TextOf(*ver));
  }
  return out;
}

Status Invalid(std::string field, std::string message) {
  return Status::InvalidArgument(fmt::format("{}: {}", field, message));
}

// Each item of the array at `field` must be an object whose string members `strings`
// are strings when present and whose `required` ones are present and not empty.
Status CheckItems(const JsonValue* array, const std::string& field, std::initializer_list<const char*> strings,
                  std::initializer_list<const char*> required) {
  if (!array || array->is_null()) return Status::OK();
  if (!array->is_array()) return Invalid(field, "Invalid value: must be an array");
  for (size_t i = 0; i < ItemsOf(*array).size(); ++i) {
    const JsonValue& item = ItemsOf(*array)[i];
    const std::string at = fmt::format("{}[{}]", field, i);
    if (!item.is_object()) return Invalid(at, "Invalid value: must be an object");
    for (const char* key : strings) {
      const JsonValue* v = FindMember(item, key);
      if (v && !v->is_null() && !v->is_string()) return Invalid(at + "." + key, "Invalid value: must be a string");
    }
    for (const char* key : required) {
      const JsonValue* v = FindMember(item, key);
      if (!v || !v->is_string() || TextOf(*v).empty()) return Invalid(at + "." + key, "Required value");
    }
  }
  return Status::OK();
}

}  // namespace

Status CheckComponent(const std::string& name, const JsonValue& object) {
  const size_t size = WriteJson(object).size();
  if (size > kMaxComponentBytes) {
    return Status::TooLarge(fmt::format("clusteroperators.config.openshift.io \"{}\" would be {} bytes, over the limit of "
                                        "{} bytes for one ClusterOperator",
                                        name, size, kMaxComponentBytes));
  }
  if (!object.is_object()) return Status::InvalidArgument("the ClusterOperator must be a JSON object");
  const JsonValue* status = FindMember(object, "status");
  if (!status || status->is_null()) return Status::OK();
  if (!status->is_object()) return Invalid("status", "Invalid value: must be an object");
  const JsonValue* conditions = FindMember(*status, "conditions");
  CINCINNATI_RETURN_IF_ERROR(CheckItems(conditions, "status.conditions",
                                        {"type", "status", "reason", "message", "lastTransitionTime"}, {"type", "status"}));
  if (conditions && conditions->is_array()) {
    for (size_t i = 0; i < ItemsOf(*conditions).size(); ++i) {
      const std::string& value = TextOf(*FindMember(ItemsOf(*conditions)[i], "status"));
      if (value != "True" && value != "False" && value != "Unknown") {
        return Invalid(fmt::format("status.conditions[{}].status", i),
                       fmt::format("Unsupported value: \"{}\": supported values: \"True\", \"False\", \"Unknown\"", value));
      }
    }
  }
  CINCINNATI_RETURN_IF_ERROR(CheckItems(FindMember(*status, "versions"), "status.versions", {"name", "version"}, {"name", "version"}));
  return CheckItems(FindMember(*status, "relatedObjects"), "status.relatedObjects", {"group", "resource", "namespace", "name"},
                    {"resource", "name"});
}

ComponentLevel LevelOf(const JsonValue& live, const JsonValue& manifest, const std::string& target_version) {
  const JsonValue* name = FindMember(live, "metadata") ? FindMember(*FindMember(live, "metadata"), "name") : nullptr;
  const std::string who = name && name->is_string() ? TextOf(*name) : "?";
  ComponentLevel level;
  if (ConditionStatus(live, "Degraded") == "True") {
    level.degraded = true;
    level.message = fmt::format("Cluster operator {} is degraded", who);
    return level;
  }
  auto wanted = Versions(manifest);
  if (wanted.empty()) wanted.emplace_back("operator", target_version);
  auto have = Versions(live);
  for (const auto& w : wanted) {
    if (std::find(have.begin(), have.end(), w) == have.end()) {
      level.message = fmt::format("Cluster operator {} is updating versions", who);
      return level;
    }
  }
  if (ConditionStatus(live, "Available") != "True") {
    level.message = fmt::format("Cluster operator {} is not available", who);
    return level;
  }
  level.done = true;
  return level;
}

Result<std::optional<JsonValue>> ComponentObjects::Get(const std::string& name) {
  std::lock_guard lock(mu_);
  return store_.Get(kComponentKind, name);
}

ComponentList ComponentObjects::ListAll() {
  std::lock_guard lock(mu_);
  ComponentList out;
  auto names = store_.List(kComponentKind);
  if (!names.ok()) {
    out.unreadable.emplace_back("*", names.status());
    return out;
  }
  for (const auto& n : *names) {
    auto object = store_.Get(kComponentKind, n);
    if (object.ok() && !*object) continue;  // removed meanwhile
    Status valid = object.ok() ? CheckComponent(n, **object) : object.status();
    if (!valid.ok()) {
      out.unreadable.emplace_back(n, valid);
      continue;
    }
    out.objects.push_back(std::move(**object));
  }
  return out;
}

Result<JsonValue> ComponentObjects::Put(const std::string& name, const JsonValue& object) {
  if (!object.is_object()) return Status::InvalidArgument("the ClusterOperator must be a JSON object");
  JsonValue stored = object;
  SetMember(stored, "apiVersion", JsonValue("config.openshift.io/v1"));
  SetMember(stored, "kind", JsonValue("ClusterOperator"));
  JsonValue metadata = FindMember(stored, "metadata") && FindMember(stored, "metadata")->is_object() ? *FindMember(stored, "metadata")
                                                                                         : JsonValue(JsonObject());
  if (const JsonValue* n = FindMember(metadata, "name"); n && (!n->is_string() || TextOf(*n) != name)) {
    return Status::InvalidArgument(fmt::format("metadata.name: Invalid value: must be \"{}\" as in the URL", name));
  }
  SetMember(metadata, "name", JsonValue(name));
  SetMember(stored, "metadata", std::move(metadata));
  CINCINNATI_RETURN_IF_ERROR(CheckComponent(name, stored));
  std::lock_guard lock(mu_);
  CINCINNATI_RETURN_IF_ERROR(store_.Put(kComponentKind, name, stored));
  return stored;
}

Result<JsonValue> ComponentObjects::PatchStatus(const std::string& name, const JsonValue& patch) {
  if (!patch.is_object()) return Status::InvalidArgument("the patch must be a JSON object (application/merge-patch+json)");
  std::lock_guard lock(mu_);
  CINCINNATI_ASSIGN_OR_RETURN(auto object, store_.Get(kComponentKind, name));
  if (!object) return Status::NotFound(fmt::format("clusteroperators.config.openshift.io \"{}\" not found", name));
  const JsonValue* status = FindMember(patch, "status");
  if (!status) return *object;
  JsonValue updated = *object;
  const JsonValue* current = FindMember(updated, "status");
  SetMember(updated, "status", MergePatch(current ? *current : JsonValue(JsonObject()), *status));
  CINCINNATI_RETURN_IF_ERROR(CheckComponent(name, updated));
  CINCINNATI_RETURN_IF_ERROR(store_.Put(kComponentKind, name, updated));
  return updated;
}

std::string ComponentObjects::ObjectName(const Manifest& manifest) {
  return Lower(fmt::format("{}.{}.{}", manifest.kind, manifest.ns.empty() ? "-" : manifest.ns, manifest.name));
}

Result<ComponentLevel> ComponentObjects::Apply(const Manifest& manifest, const std::string& target_version) {
  std::lock_guard lock(mu_);
  if (manifest.kind != "ClusterOperator") {
    // Written only when it differs: re-applying a group (every pass, every restart) is a read.
    auto live = store_.Get(kObjectKind, ObjectName(manifest));
    if (!live.ok() || !*live || **live != manifest.object) {
      Status s = store_.Put(kObjectKind, ObjectName(manifest), manifest.object);
      if (!s.ok()) return s.WithContext(manifest.Describe());
    }
    return ComponentLevel{true, false, ""};
  }
  CINCINNATI_ASSIGN_OR_RETURN(auto live, store_.Get(kComponentKind, manifest.name));
  JsonValue object = live ? *live
                          : JsonValue(JsonObject({{"apiVersion", JsonValue("config.openshift.io/v1")},
                                               {"kind", JsonValue("ClusterOperator")},
                                               {"metadata", JsonValue(JsonObject({{"name", JsonValue(manifest.name)}}))},
                                               {"status", JsonValue(JsonObject())}}));
  JsonValue metadata = FindMember(object, "metadata") && FindMember(object, "metadata")->is_object() ? *FindMember(object, "metadata")
                                                                                         : JsonValue(JsonObject());
  JsonValue annotations = FindMember(metadata, "annotations") && FindMember(metadata, "annotations")->is_object()
                              ? *FindMember(metadata, "annotations")
                              : JsonValue(JsonObject());
  // The manifest's own annotations (rollout settings for components) follow the payload.
  if (const JsonValue* m = FindMember(manifest.object, "metadata"); m && FindMember(*m, "annotations") && FindMember(*m, "annotations")->is_object()) {
    for (const auto& [k, v] : MembersOf(*FindMember(*m, "annotations"))) SetMember(annotations, k, v);
  }
  SetMember(annotations, kDesiredVersionAnnotation, JsonValue(target_version));
  SetMember(metadata, "annotations", std::move(annotations));
  SetMember(object, "metadata", std::move(metadata));
  if (!live || *live != object) {  // unchanged: no write, so a component never sees a version twice
    CINCINNATI_RETURN_IF_ERROR(CheckComponent(manifest.name, object).WithContext(manifest.Describe()));
    Status s = store_.Put(kComponentKind, manifest.name, object);
    if (!s.ok()) return s.WithContext(manifest.Describe());
  }
  return LevelOf(object, manifest.object, target_version);
}

Result<std::optional<JsonValue>> ComponentObjects::GetObject(const std::string& name) {
  std::lock_guard lock(mu_);
  return store_.Get(kObjectKind, name);
}

Result<std::vector<std::string>> ComponentObjects::ListObjects() {
  std::lock_guard lock(mu_);
  return store_.List(kObjectKind);
}

}  // namespace cincinnati::agent
