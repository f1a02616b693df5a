// The Kubernetes-style API objects of the agent and the operator (and the documents
// their peers answer) are Boost.JSON values; this header adds what those APIs need on
// top of them: reading with the project's limits, writing in the bytes the APIs have
// always served, JSON merge patch (RFC 7386), and total accessors (a member that is
// absent or of another kind reads as empty, as Kubernetes clients treat it).
//
// Objects keep their keys in insertion order (what the APIs write is stable and reads
// like Kubernetes' output); a key appears once. Values are plain data: copy freely; not
// synchronized.
#pragma once

#include <boost/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/json.h"
#include "core/status.h"

namespace cincinnati::kube {

// Short names for Boost.JSON's types, which the APIs' signatures use throughout.
using JsonValue = boost::json::value;
using JsonObject = boost::json::object;
using JsonArray = boost::json::array;

// Reads with simdjson, as every other reader of the project does (same acceptance and
// error messages), into a Boost.JSON value. Total: bad JSON, documents nested deeper
// than 64 levels or larger than `max_bytes` are errors naming the position or the limit.
Result<JsonValue> ParseJson(std::string_view text, size_t max_bytes = size_t{4} << 20);

// Writes in the forms these APIs have always served (core/json.h): compact, or
// pretty-printed with `indent` spaces per level.
using ::cincinnati::WriteJson;

// RFC 7386: members of `patch` replace those of `target`, null removes, objects merge
// recursively; a patch that is not an object replaces the target. Kept members keep
// their places.
JsonValue MergePatch(const JsonValue& target, const JsonValue& patch);

// A number's JSON text as a value: an integer when it has neither fraction nor exponent
// and fits in 64 bits, else a double. Null when `text` is not a JSON number.
JsonValue NumberFromText(std::string_view text);

// Total accessors.
// The member `key` of an object: nullptr when absent or when `v` is not an object.
const JsonValue* FindMember(const JsonValue& v, std::string_view key);
JsonValue* FindMember(JsonValue& v, std::string_view key);
// A string's contents, or a number's JSON text ("30", "0.5"); empty for anything else.
std::string TextOf(const JsonValue& v);
// A number without fraction or exponent that fits in an int64_t.
std::optional<int64_t> IntegerOf(const JsonValue& v);
// A boolean's value; false for anything else.
bool BoolOf(const JsonValue& v);
// An array's items, an object's members; empty for anything else.
const JsonArray& ItemsOf(const JsonValue& v);
const JsonObject& MembersOf(const JsonValue& v);
// Sets (replacing in place, or appending) a member; `object` must be an object.
void SetMember(JsonValue& object, std::string_view key, JsonValue value);
// Removes a member, keeping the others in their order.
void EraseMember(JsonValue& object, std::string_view key);

}  // namespace cincinnati::kube
