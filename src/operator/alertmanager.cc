#include "operator/alertmanager.h"

#include <fmt/format.h>

#include "kube/json_value.h"
#include "operator/http_call.h"
#include "operator/scheduler.h"

namespace cincinnati::upgrade {

using kube::JsonValue;
using kube::JsonObject;
using kube::JsonArray;
using kube::FindMember;
using kube::TextOf;
using kube::BoolOf;
using kube::ItemsOf;

namespace {

std::string Base(const std::string& url) {
  std::string base = url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base;
}

// Alertmanager writes fractional seconds; we keep RFC 3339 to the second.
std::string Normalize(const std::string& time) {
  auto t = ParseTime(time);
  return t.ok() ? FormatTime(*t) : time;
}

}  // namespace

Result<std::vector<Silence>> ReadSilences(std::string_view body) {
  auto doc = kube::ParseJson(body);
  if (!doc.ok()) return Status::InvalidArgument("the silences answer is not JSON: " + doc.status().message());
  if (!doc->is_array()) return Status::InvalidArgument("the silences answer is not a list");
  std::vector<Silence> out;
  for (size_t i = 0; i < ItemsOf(*doc).size(); ++i) {
    const JsonValue& s = ItemsOf(*doc)[i];
    const std::string at = fmt::format("silences[{}]", i);
    if (!s.is_object()) return Status::InvalidArgument(at + ": not an object");
    auto text = [&](const JsonValue& o, const char* key, std::string& out_value) -> Status {
      const JsonValue* v = FindMember(o, key);
      if (!v || v->is_null()) return Status::OK();
      if (!v->is_string()) return Status::InvalidArgument(fmt::format("{}.{}: not a string", at, key));
      out_value = TextOf(*v);
      return Status::OK();
    };
    Silence silence;
    CINCINNATI_RETURN_IF_ERROR(text(s, "id", silence.id));
    CINCINNATI_RETURN_IF_ERROR(text(s, "startsAt", silence.starts_at));
    CINCINNATI_RETURN_IF_ERROR(text(s, "endsAt", silence.ends_at));
    CINCINNATI_RETURN_IF_ERROR(text(s, "createdBy", silence.created_by));
    CINCINNATI_RETURN_IF_ERROR(text(s, "comment", silence.comment));
    silence.starts_at = Normalize(silence.starts_at);
    silence.ends_at = Normalize(silence.ends_at);
    if (const JsonValue* status = FindMember(s, "status"); status && status->is_object()) {
      CINCINNATI_RETURN_IF_ERROR(text(*status, "state", silence.state));
    }
    if (const JsonValue* matchers = FindMember(s, "matchers"); matchers && !matchers->is_null()) {
      if (!matchers->is_array()) return Status::InvalidArgument(at + ".matchers: not a list");
      for (const auto& m : ItemsOf(*matchers)) {
        if (!m.is_object()) return Status::InvalidArgument(at + ".matchers: an entry is not an object");
        SilenceMatcher matcher;
        CINCINNATI_RETURN_IF_ERROR(text(m, "name", matcher.name));
        CINCINNATI_RETURN_IF_ERROR(text(m, "value", matcher.value));
        const JsonValue* regex = FindMember(m, "isRegex");
        const JsonValue* equal = FindMember(m, "isEqual");
        matcher.is_regex = regex && regex->is_bool() && BoolOf(*regex);
        matcher.is_equal = !equal || !equal->is_bool() || BoolOf(*equal);
        silence.matchers.push_back(std::move(matcher));
      }
    }
    if (silence.id.empty()) return Status::InvalidArgument(at + ": no id");
    out.push_back(std::move(silence));
  }
  return out;
}

Result<std::vector<Silence>> AlertmanagerWindows::List() {
  HttpPeer peer{settings_.token_file, settings_.ca_path, settings_.timeout, {}};
  const std::string url = Base(settings_.url) + "/api/v2/silences";
  CINCINNATI_ASSIGN_OR_RETURN(std::string body, CallPeer(peer, "GET", url));
  auto silences = ReadSilences(body);
  if (!silences.ok()) return silences.status().WithContext(url);
  return silences;
}

Result<std::string> AlertmanagerWindows::Create(const Silence& silence) {
  JsonArray matchers;
  for (const auto& m : silence.matchers) {
    matchers.push_back(JsonValue(JsonObject({{"name", JsonValue(m.name)},
                                          {"value", JsonValue(m.value)},
                                          {"isRegex", JsonValue(m.is_regex)},
                                          {"isEqual", JsonValue(m.is_equal)}})));
  }
  JsonValue body = JsonObject({{"matchers", JsonValue(std::move(matchers))},
                                      {"startsAt", JsonValue(silence.starts_at)},
                                      {"endsAt", JsonValue(silence.ends_at)},
                                      {"createdBy", JsonValue(silence.created_by)},
                                      {"comment", JsonValue(silence.comment)}});
  HttpPeer peer{settings_.token_file, settings_.ca_path, settings_.timeout, {}};
  const std::string url = Base(settings_.url) + "/api/v2/silences";
  CINCINNATI_ASSIGN_OR_RETURN(std::string answer, CallPeer(peer, "POST", url, kube::WriteJson(body)));
  auto doc = kube::ParseJson(answer);
  const JsonValue* id = doc.ok() && doc->is_object() ? FindMember(*doc, "silenceID") : nullptr;
  if (!id || !id->is_string() || TextOf(*id).empty()) return Status::IoError(fmt::format("POST {}: the answer has no silenceID", url));
  return TextOf(*id);
}

Status AlertmanagerWindows::Expire(const std::string& id) {
  HttpPeer peer{settings_.token_file, settings_.ca_path, settings_.timeout, {}};
  return CallPeer(peer, "DELETE", Base(settings_.url) + "/api/v2/silence/" + id).status();
}

}  // namespace cincinnati::upgrade
