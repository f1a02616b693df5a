#include "config_api/cluster_version.h"

#include <fmt/format.h>

#include <set>

#include "core/semver.h"
#include "graph_client/graph_request.h"

namespace cincinnati::config_api {
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

using graph_client::IsUuidV4;
using graph_client::LooksLikeUrl;
using graph_client::MatchingRule;

using Members = JsonObject;

// Reads the members of one object, remembering the first problem (named by its path)
// and which keys were read, so that unknown ones can be refused.
class Fields {
 public:
  // `strict_items`: items of arrays read through Array() refuse unknown members.
  Fields(const JsonValue* object, std::string path, bool strict_items = true)
      : object_(object), path_(std::move(path)), strict_items_(strict_items) {
    if (object_ && !object_->is_null() && !object_->is_object()) Fail("", "must be an object");
  }
  std::string String(std::string_view key) {
    const JsonValue* v = Get(key);
    if (!v || v->is_null()) return {};
    if (!v->is_string()) return Fail(key, "must be a string"), std::string();
    return TextOf(*v);
  }
  bool Bool(std::string_view key) {
    const JsonValue* v = Get(key);
    if (!v || v->is_null()) return false;
    if (!v->is_bool()) return Fail(key, "must be a boolean"), false;
    return BoolOf(*v);
  }
  int64_t Integer(std::string_view key) {
    const JsonValue* v = Get(key);
    if (!v || v->is_null()) return 0;
    auto n = IntegerOf(*v);
    if (!n) return Fail(key, "must be an integer"), 0;
    return *n;
  }
  // An array member (absent or null: empty); each item read by `read`.
  template <typename T, typename F>
  std::vector<T> Array(std::string_view key, F read) {
    std::vector<T> out;
    const JsonValue* v = Get(key);
    if (!v || v->is_null()) return out;
    if (!v->is_array()) return Fail(key, "must be an array"), out;
    for (size_t i = 0; i < ItemsOf(*v).size() && status_.ok(); ++i) {
      Fields item(&ItemsOf(*v)[i], fmt::format("{}[{}]", Path(key), i), strict_items_);
      out.push_back(read(item));
      item.Finish(strict_items_);
      if (!item.status_.ok()) status_ = item.status_;
    }
    return out;
  }
  const JsonValue* Get(std::string_view key) {
    seen_.insert(std::string(key));
    return object_ && object_->is_object() ? FindMember(*object_, key) : nullptr;
  }
  void Fail(std::string_view key, std::string_view why) {
    if (status_.ok()) status_ = Status::InvalidArgument(fmt::format("{}: {}", key.empty() ? path_ : Path(key), why));
  }
  std::string Path(std::string_view key) const { return path_.empty() ? std::string(key) : path_ + "." + std::string(key); }
  // With `strict`, a member that was never read is an error.
  Status Finish(bool strict) {
    if (strict && status_.ok() && object_ && object_->is_object()) {
      for (const auto& [key, _] : MembersOf(*object_)) {
        if (!seen_.count(key)) Fail(key, "unknown field");
      }
    }
    return status_;
  }
  const Status& status() const { return status_; }
  void Adopt(const Status& s) {
    if (status_.ok() && !s.ok()) status_ = s;
  }

 private:
  const JsonValue* object_;
  std::string path_;
  bool strict_items_;
  Status status_;
  std::set<std::string> seen_;
};

JsonValue Strings(const std::vector<std::string>& list) {
  JsonArray items;
  for (const auto& s : list) items.push_back(JsonValue(s));
  return JsonValue(std::move(items));
}

Release ReadRelease(Fields& f) {
  Release r;
  r.version = f.String("version");
  r.image = f.String("image");
  r.url = f.String("url");
  if (const JsonValue* channels = f.Get("channels"); channels && !channels->is_null()) {
    if (!channels->is_array()) f.Fail("channels", "must be an array");
    for (size_t i = 0; channels->is_array() && i < ItemsOf(*channels).size(); ++i) {
      if (!ItemsOf(*channels)[i].is_string()) f.Fail(fmt::format("channels[{}]", i), "must be a string");
      r.channels.push_back(TextOf(ItemsOf(*channels)[i]));
    }
  }
  r.multi_architecture = f.String("architecture") == "Multi";
  return r;
}

Condition ReadCondition(Fields& f) {
  return {f.String("type"), f.String("status"), f.String("reason"), f.String("message"), f.String("lastTransitionTime")};
}

MatchingRule ReadRule(Fields& f) {
  MatchingRule rule;
  rule.type = f.String("type");
  if (const JsonValue* promql = f.Get("promql"); promql && promql->is_object()) {
    if (const JsonValue* q = FindMember(*promql, "promql"); q && q->is_string()) rule.promql = TextOf(*q);
  }
  return rule;
}

Risk ReadRisk(Fields& f) {
  Risk risk;
  risk.url = f.String("url");
  risk.name = f.String("name");
  risk.message = f.String("message");
  risk.matching_rules = f.Array<MatchingRule>("matchingRules", ReadRule);
  return risk;
}

JsonValue RiskToJson(const Risk& risk) {
  JsonArray rules;
  for (const auto& rule : risk.matching_rules) {
    JsonValue r = JsonObject({{"type", JsonValue(rule.type)}});
    if (rule.promql) SetMember(r, "promql", JsonValue(JsonObject({{"promql", JsonValue(*rule.promql)}})));
    rules.push_back(std::move(r));
  }
  return JsonValue(JsonObject({{"url", JsonValue(risk.url)},
                            {"name", JsonValue(risk.name)},
                            {"message", JsonValue(risk.message)},
                            {"matchingRules", JsonValue(std::move(rules))}}));
}

}  // namespace

const Condition* ClusterVersion::FindCondition(std::string_view type) const {
  for (const auto& c : status.conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

void ClusterVersion::SetCondition(Condition condition) {
  for (auto& c : status.conditions) {
    if (c.type != condition.type) continue;
    if (c.status == condition.status && !c.last_transition_time.empty()) {
      condition.last_transition_time = c.last_transition_time;
    }
    c = std::move(condition);
    return;
  }
  status.conditions.push_back(std::move(condition));
}

JsonValue ReleaseToJson(const Release& r) {
  JsonValue out = JsonObject();
  if (r.multi_architecture) SetMember(out, "architecture", JsonValue("Multi"));
  if (!r.channels.empty()) SetMember(out, "channels", Strings(r.channels));
  SetMember(out, "image", JsonValue(r.image));
  if (!r.url.empty()) SetMember(out, "url", JsonValue(r.url));
  SetMember(out, "version", JsonValue(r.version));
  return out;
}

JsonValue ConditionToJson(const Condition& c) {
  JsonValue out = JsonObject({{"lastTransitionTime", JsonValue(c.last_transition_time)}});
  if (!c.message.empty()) SetMember(out, "message", JsonValue(c.message));
  if (!c.reason.empty()) SetMember(out, "reason", JsonValue(c.reason));
  SetMember(out, "status", JsonValue(c.status));
  SetMember(out, "type", JsonValue(c.type));
  return out;
}

JsonValue SpecToJson(const ClusterVersionSpec& spec) {
  JsonValue out = JsonObject();
  if (!spec.channel.empty()) SetMember(out, "channel", JsonValue(spec.channel));
  SetMember(out, "clusterID", JsonValue(spec.cluster_id));
  if (spec.desired_update) {
    const DesiredUpdate& d = *spec.desired_update;
    JsonValue desired = JsonObject();
    if (!d.architecture.empty()) SetMember(desired, "architecture", JsonValue(d.architecture));
    SetMember(desired, "force", JsonValue(d.force));
    if (!d.image.empty()) SetMember(desired, "image", JsonValue(d.image));
    if (!d.version.empty()) SetMember(desired, "version", JsonValue(d.version));
    SetMember(out, "desiredUpdate", std::move(desired));
  }
  if (!spec.signature_stores.empty()) {
    JsonArray stores;
    for (const auto& s : spec.signature_stores) stores.push_back(JsonValue(JsonObject({{"url", JsonValue(s.url)}})));
    SetMember(out, "signatureStores", JsonValue(std::move(stores)));
  }
  if (!spec.upstream.empty()) SetMember(out, "upstream", JsonValue(spec.upstream));
  return out;
}

JsonValue ToJson(const ClusterVersion& cv) {
  JsonValue metadata = JsonObject({{"creationTimestamp", JsonValue(cv.creation_timestamp)},
                                          {"generation", JsonValue(int64_t(cv.generation))},
                                          {"name", JsonValue("version")},
                                          {"resourceVersion", JsonValue(std::to_string(cv.resource_version))},
                                          {"uid", JsonValue(cv.uid)}});
  const ClusterVersionStatus& s = cv.status;
  JsonArray available, conditional, conditions, history;
  for (const auto& r : s.available_updates) available.push_back(ReleaseToJson(r));
  for (const auto& u : s.conditional_updates) {
    JsonArray risks, update_conditions;
    for (const auto& risk : u.risks) risks.push_back(RiskToJson(risk));
    for (const auto& c : u.conditions) update_conditions.push_back(ConditionToJson(c));
    conditional.push_back(JsonValue(JsonObject({{"conditions", JsonValue(std::move(update_conditions))},
                                             {"release", ReleaseToJson(u.release)},
                                             {"risks", JsonValue(std::move(risks))}})));
  }
  for (const auto& c : s.conditions) conditions.push_back(ConditionToJson(c));
  for (const auto& h : s.history) {
    JsonValue entry = JsonObject();
    if (!h.accepted_risks.empty()) SetMember(entry, "acceptedRisks", JsonValue(h.accepted_risks));
    SetMember(entry, "completionTime", h.completion_time.empty() ? JsonValue() : JsonValue(h.completion_time));
    SetMember(entry, "image", JsonValue(h.image));
    SetMember(entry, "startedTime", JsonValue(h.started_time));
    SetMember(entry, "state", JsonValue(h.state));
    SetMember(entry, "verified", JsonValue(h.verified));
    SetMember(entry, "version", JsonValue(h.version));
    history.push_back(std::move(entry));
  }
  JsonValue status = JsonValue(JsonObject(
      {{"availableUpdates", available.empty() ? JsonValue() : JsonValue(std::move(available))}}));
  if (!conditional.empty()) SetMember(status, "conditionalUpdates", JsonValue(std::move(conditional)));
  SetMember(status, "conditions", JsonValue(std::move(conditions)));
  SetMember(status, "desired", ReleaseToJson(s.desired));
  SetMember(status, "history", JsonValue(std::move(history)));
  SetMember(status, "observedGeneration", JsonValue(int64_t(s.observed_generation)));
  SetMember(status, "versionHash", JsonValue(s.version_hash));
  return JsonValue(JsonObject({{"apiVersion", JsonValue("config.openshift.io/v1")},
                            {"kind", JsonValue("ClusterVersion")},
                            {"metadata", std::move(metadata)},
                            {"spec", SpecToJson(cv.spec)},
                            {"status", std::move(status)}}));
}

namespace {

// Refuses values the agent cannot act on (a spec it is given or keeps).
Status ValidateSpec(const ClusterVersionSpec& spec) {
  if (spec.desired_update) {
    const DesiredUpdate& update = *spec.desired_update;
    if (!update.architecture.empty() && update.architecture != "Multi") {
      return Status::InvalidArgument("spec.desiredUpdate.architecture: Unsupported value: \"" + update.architecture +
                                     "\": supported values: \"Multi\"");
    }
    if (update.version.empty() && update.image.empty() && update.architecture.empty()) {
      return Status::InvalidArgument(
          "spec.desiredUpdate: Invalid value: at least one of version, image or architecture must be set");
    }
    if (!update.version.empty() && !Version::Parse(update.version).ok()) {
      return Status::InvalidArgument("spec.desiredUpdate.version: Invalid value: \"" + update.version +
                                     "\": not a semantic version");
    }
  }
  if (!IsUuidV4(spec.cluster_id)) {
    return Status::InvalidArgument("spec.clusterID: Invalid value: \"" + spec.cluster_id +
                                   "\": must be an RFC 4122 version 4 UUID in lower case");
  }
  if (!spec.upstream.empty() && (!LooksLikeUrl(spec.upstream) || (spec.upstream.rfind("http://", 0) != 0 &&
                                                                  spec.upstream.rfind("https://", 0) != 0))) {
    return Status::InvalidArgument("spec.upstream: Invalid value: \"" + spec.upstream + "\": must be an http or https URL");
  }
  for (size_t i = 0; i < spec.signature_stores.size(); ++i) {
    const std::string& url = spec.signature_stores[i].url;
    if (url.rfind("https://", 0) != 0 && url.rfind("http://", 0) != 0 && url.rfind("file://", 0) != 0) {
      return Status::InvalidArgument(
          fmt::format("spec.signatureStores[{}].url: Invalid value: \"{}\": must be an http, https or file URL", i, url));
    }
  }
  return Status::OK();
}

// With `strict`, unknown fields and invalid values are errors (a spec the agent takes);
// without, only the types of the fields read are checked (a spec another process keeps).
Result<ClusterVersionSpec> ReadSpec(const JsonValue& value, bool strict) {
  Fields f(&value, "spec", strict);
  ClusterVersionSpec spec;
  spec.cluster_id = f.String("clusterID");
  spec.channel = f.String("channel");
  spec.upstream = f.String("upstream");
  if (const JsonValue* desired = f.Get("desiredUpdate"); desired && !desired->is_null()) {
    Fields d(desired, "spec.desiredUpdate");
    DesiredUpdate update;
    update.version = d.String("version");
    update.image = d.String("image");
    update.force = d.Bool("force");
    update.architecture = d.String("architecture");
    f.Adopt(d.Finish(strict));
    spec.desired_update = std::move(update);
  }
  spec.signature_stores = f.Array<SignatureStore>("signatureStores", [](Fields& s) { return SignatureStore{s.String("url")}; });
  CINCINNATI_RETURN_IF_ERROR(f.Finish(strict));
  if (strict) CINCINNATI_RETURN_IF_ERROR(ValidateSpec(spec));
  return spec;
}

}  // namespace

Result<ClusterVersionSpec> SpecFromJson(const JsonValue& value) { return ReadSpec(value, true); }

Result<ClusterVersion> FromJson(const JsonValue& document, ReadAs read_as) {
  Fields top(&document, "");
  ClusterVersion cv;
  Fields metadata(top.Get("metadata"), "metadata");
  cv.generation = metadata.Integer("generation");
  cv.resource_version = std::atoll(metadata.String("resourceVersion").c_str());
  cv.creation_timestamp = metadata.String("creationTimestamp");
  cv.uid = metadata.String("uid");
  CINCINNATI_RETURN_IF_ERROR(metadata.Finish(false));
  const JsonValue* spec = top.Get("spec");
  if (read_as == ReadAs::kOwnState) {
    if (!spec) return Status::InvalidArgument("spec: missing");
    CINCINNATI_ASSIGN_OR_RETURN(cv.spec, ReadSpec(*spec, true));
  } else if (spec) {
    CINCINNATI_ASSIGN_OR_RETURN(cv.spec, ReadSpec(*spec, false));
  }

  Fields s(top.Get("status"), "status", read_as == ReadAs::kOwnState);
  if (const JsonValue* desired = s.Get("desired")) {
    Fields d(desired, "status.desired");
    cv.status.desired = ReadRelease(d);
    s.Adopt(d.Finish(false));
  }
  cv.status.history = s.Array<UpdateHistoryEntry>("history", [](Fields& h) {
    UpdateHistoryEntry e;
    e.state = h.String("state");
    e.started_time = h.String("startedTime");
    e.completion_time = h.String("completionTime");
    e.version = h.String("version");
    e.image = h.String("image");
    e.verified = h.Bool("verified");
    e.accepted_risks = h.String("acceptedRisks");
    return e;
  });
  cv.status.observed_generation = s.Integer("observedGeneration");
  cv.status.version_hash = s.String("versionHash");
  cv.status.available_updates = s.Array<Release>("availableUpdates", ReadRelease);
  cv.status.conditional_updates = s.Array<ConditionalUpdateStatus>("conditionalUpdates", [](Fields& u) {
    ConditionalUpdateStatus update;
    Fields release(u.Get("release"), "release");
    update.release = ReadRelease(release);
    u.Adopt(release.Finish(false));
    update.risks = u.Array<Risk>("risks", ReadRisk);
    update.conditions = u.Array<Condition>("conditions", ReadCondition);
    return update;
  });
  cv.status.conditions = s.Array<Condition>("conditions", ReadCondition);
  CINCINNATI_RETURN_IF_ERROR(s.Finish(false));
  CINCINNATI_RETURN_IF_ERROR(top.Finish(false));
  return cv;
}

}  // namespace cincinnati::config_api
