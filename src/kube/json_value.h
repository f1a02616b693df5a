// JsonValue: a small mutable JSON tree for the Kubernetes-style API objects of the
// agent and the operator (and the documents their peers answer), and JSON merge patch
// (RFC 7386) over it.
//
// Objects keep their keys in insertion order (what the API writes is stable and reads
// like Kubernetes' output); a key appears once. Integers keep their exact text; other
// numbers are written in simdjson's shortest form of the same double. ParseJson is total: bad JSON, documents nested deeper than 64
// levels or larger than `max_bytes` are errors naming the position or the limit.
// Values are plain data: copy freely; not synchronized.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace cincinnati::kube {

class JsonValue {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  using Members = std::vector<std::pair<std::string, JsonValue>>;

  JsonValue() = default;  // null
  static JsonValue Bool(bool b);
  static JsonValue Number(std::string text);  // must be a JSON number
  static JsonValue Integer(int64_t n);
  static JsonValue String(std::string s);
  static JsonValue Array(std::vector<JsonValue> items = {});
  static JsonValue Object(Members members = {});

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  bool is_object() const { return kind_ == Kind::kObject; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_number() const { return kind_ == Kind::kNumber; }

  bool bool_value() const { return bool_; }
  const std::string& text() const { return text_; }  // string contents or number text
  std::optional<int64_t> integer() const;            // a number without fraction or exponent
  const std::vector<JsonValue>& items() const { return items_; }
  std::vector<JsonValue>& items() { return items_; }
  const Members& members() const { return members_; }

  // Object access: nullptr when absent (or not an object).
  const JsonValue* Find(std::string_view key) const;
  // Sets (replacing in place, or appending) a member; the value must be an object.
  void Set(std::string key, JsonValue value);
  void Erase(std::string_view key);

  bool operator==(const JsonValue& other) const;

 private:
  Kind kind_ = Kind::kNull;
  bool bool_ = false;
  std::string text_;
  std::vector<JsonValue> items_;
  Members members_;
};

Result<JsonValue> ParseJson(std::string_view text, size_t max_bytes = size_t{4} << 20);
// Compact JSON; `indent` > 0 pretty-prints with that many spaces per level.
std::string WriteJson(const JsonValue& value, int indent = 0);

// RFC 7386: members of `patch` replace those of `target`, null removes, objects merge
// recursively; a patch that is not an object replaces the target.
JsonValue MergePatch(const JsonValue& target, const JsonValue& patch);

}  // namespace cincinnati::kube
