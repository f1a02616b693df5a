#include "kube/json_value.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <charconv>
#include <cstdlib>
#include <limits>

namespace cincinnati::kube {
namespace {

constexpr size_t kMaxDepth = 64;

Result<JsonValue> FromElement(simdjson::dom::element e, size_t depth) {
  if (depth > kMaxDepth) return Status::InvalidArgument(fmt::format("JSON nested deeper than {} levels", kMaxDepth));
  switch (e.type()) {
    case simdjson::dom::element_type::NULL_VALUE:
      return JsonValue();
    case simdjson::dom::element_type::BOOL:
      return JsonValue(bool(e.get_bool()));
    case simdjson::dom::element_type::INT64:
      return JsonValue(int64_t(e.get_int64()));
    case simdjson::dom::element_type::UINT64:
      return JsonValue(uint64_t(e.get_uint64()));
    case simdjson::dom::element_type::DOUBLE:
      return JsonValue(double(e.get_double()));
    case simdjson::dom::element_type::STRING:
      return JsonValue(std::string_view(e.get_string()));
    case simdjson::dom::element_type::ARRAY: {
      JsonArray items;
      for (simdjson::dom::element item : e.get_array()) {
        CINCINNATI_ASSIGN_OR_RETURN(JsonValue v, FromElement(item, depth + 1));
        items.push_back(std::move(v));
      }
      return JsonValue(std::move(items));
    }
    case simdjson::dom::element_type::OBJECT: {
      JsonObject object;
      for (auto field : e.get_object()) {
        CINCINNATI_ASSIGN_OR_RETURN(JsonValue v, FromElement(field.value, depth + 1));
        object[field.key] = std::move(v);  // a repeated key: the last wins, in the first one's place
      }
      return JsonValue(std::move(object));
    }
  }
  return Status::InvalidArgument("unknown JSON element");
}

}  // namespace

Result<JsonValue> ParseJson(std::string_view text, size_t max_bytes) {
  if (text.size() > max_bytes) {
    return Status::InvalidArgument(fmt::format("JSON document of {} bytes exceeds the limit of {} bytes", text.size(), max_bytes));
  }
  simdjson::dom::parser parser;
  simdjson::padded_string padded(text.data(), text.size());
  simdjson::dom::element doc;
  if (auto err = parser.parse(padded).get(doc)) {
    return Status::InvalidArgument(fmt::format("invalid JSON: {}", simdjson::error_message(err)));
  }
  return FromElement(doc, 0);
}

JsonValue MergePatch(const JsonValue& target, const JsonValue& patch) {
  if (!patch.is_object()) return patch;
  JsonValue result = target.is_object() ? target : JsonValue(JsonObject());
  for (const auto& member : patch.get_object()) {
    if (member.value().is_null()) {
      EraseMember(result, member.key());
    } else {
      const JsonValue* existing = FindMember(result, member.key());
      SetMember(result, member.key(), MergePatch(existing ? *existing : JsonValue(), member.value()));
    }
  }
  return result;
}

JsonValue NumberFromText(std::string_view text) {
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  if (text.find_first_of(".eE") == std::string_view::npos) {
    int64_t n = 0;
    auto [ptr, ec] = std::from_chars(begin, end, n);
    if (ec == std::errc() && ptr == end) return JsonValue(n);
  }
  double d = 0;
  auto [ptr, ec] = std::from_chars(begin, end, d);
  if (ec == std::errc() && ptr == end) return JsonValue(d);
  return JsonValue();
}

const JsonValue* FindMember(const JsonValue& v, std::string_view key) {
  const JsonObject* object = v.if_object();
  return object ? object->if_contains(key) : nullptr;
}

JsonValue* FindMember(JsonValue& v, std::string_view key) {
  JsonObject* object = v.if_object();
  return object ? object->if_contains(key) : nullptr;
}

std::string TextOf(const JsonValue& v) {
  if (const boost::json::string* s = v.if_string()) return std::string(s->data(), s->size());
  return v.is_number() ? WriteJson(v) : std::string();
}

std::optional<int64_t> IntegerOf(const JsonValue& v) {
  if (v.is_int64()) return v.get_int64();
  if (v.is_uint64() && v.get_uint64() <= uint64_t(std::numeric_limits<int64_t>::max())) return int64_t(v.get_uint64());
  return std::nullopt;
}

bool BoolOf(const JsonValue& v) { return v.is_bool() && v.get_bool(); }

const JsonArray& ItemsOf(const JsonValue& v) {
  static const JsonArray kEmpty;
  const JsonArray* a = v.if_array();
  return a ? *a : kEmpty;
}

const JsonObject& MembersOf(const JsonValue& v) {
  static const JsonObject kEmpty;
  const JsonObject* o = v.if_object();
  return o ? *o : kEmpty;
}

void SetMember(JsonValue& object, std::string_view key, JsonValue value) { object.as_object()[key] = std::move(value); }

void EraseMember(JsonValue& object, std::string_view key) {
  if (JsonObject* o = object.if_object()) o->stable_erase(key);
}

}  // namespace cincinnati::kube
