// Reading the agent's answers in tests: JSON that does not parse reads as null, and a
// missing step of a path reads as null, so that an answer from an agent that is not up
// yet fails an assertion instead of crashing the test.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

#include "kube/json_value.h"

namespace cincinnati::testing {
using kube::FindMember;
using kube::TextOf;
using kube::ItemsOf;

inline kube::JsonValue Json(const std::string& text) {
  auto v = kube::ParseJson(text, size_t{64} << 20);
  return v.ok() ? *v : kube::JsonValue();
}

// The value at `path`, or null.
inline const kube::JsonValue& At(const kube::JsonValue& v, std::initializer_list<std::string_view> path) {
  static const kube::JsonValue kNull;
  const kube::JsonValue* at = &v;
  for (std::string_view key : path) {
    at = FindMember(*at, key);
    if (!at) return kNull;
  }
  return *at;
}

// The ClusterVersion's condition of `type`, or nullptr.
inline const kube::JsonValue* ConditionOf(const kube::JsonValue& cv, std::string_view type) {
  const kube::JsonValue& list = At(cv, {"status", "conditions"});
  if (!list.is_array()) return nullptr;
  for (const auto& c : ItemsOf(list)) {
    if (FindMember(c, "type") && TextOf(*FindMember(c, "type")) == type) return &c;
  }
  return nullptr;
}

// Whether the ClusterVersion's status list `list` (availableUpdates, conditionalUpdates)
// holds `version` (an entry's own version, or its release's).
inline bool ListsVersion(const kube::JsonValue& cv, const char* list, const std::string& version) {
  const kube::JsonValue& items = At(cv, {"status", list});
  if (!items.is_array()) return false;
  for (const kube::JsonValue& item : ItemsOf(items)) {
    const kube::JsonValue* release = FindMember(item, "release");
    if (TextOf((release ? At(*release, {"version"}) : At(item, {"version"}))) == version) return true;
  }
  return false;
}

// A field of that condition ("" when absent).
inline std::string ConditionText(const kube::JsonValue& cv, std::string_view type, const char* field) {
  const kube::JsonValue* c = ConditionOf(cv, type);
  return c && FindMember(*c, field) ? TextOf(*FindMember(*c, field)) : "";
}

}  // namespace cincinnati::testing
