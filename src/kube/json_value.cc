#include "kube/json_value.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <charconv>

#include "core/json_writer.h"

namespace cincinnati::kube {
namespace {

constexpr size_t kMaxDepth = 64;

Result<JsonValue> FromElement(simdjson::dom::element e, size_t depth) {
  if (depth > kMaxDepth) return Status::InvalidArgument(fmt::format("JSON nested deeper than {} levels", kMaxDepth));
  switch (e.type()) {
    case simdjson::dom::element_type::NULL_VALUE:
      return JsonValue();
    case simdjson::dom::element_type::BOOL:
      return JsonValue::Bool(bool(e.get_bool()));
    case simdjson::dom::element_type::INT64:
    case simdjson::dom::element_type::UINT64:
    case simdjson::dom::element_type::DOUBLE:
      return JsonValue::Number(simdjson::minify(e));
    case simdjson::dom::element_type::STRING:
      return JsonValue::String(std::string(std::string_view(e.get_string())));
    case simdjson::dom::element_type::ARRAY: {
      std::vector<JsonValue> items;
      for (simdjson::dom::element item : e.get_array()) {
        CINCINNATI_ASSIGN_OR_RETURN(JsonValue v, FromElement(item, depth + 1));
        items.push_back(std::move(v));
      }
      return JsonValue::Array(std::move(items));
    }
    case simdjson::dom::element_type::OBJECT: {
      JsonValue object = JsonValue::Object();
      for (auto field : e.get_object()) {
        CINCINNATI_ASSIGN_OR_RETURN(JsonValue v, FromElement(field.value, depth + 1));
        object.Set(std::string(field.key), std::move(v));  // a repeated key: the last wins
      }
      return object;
    }
  }
  return Status::InvalidArgument("unknown JSON element");
}

void Write(const JsonValue& v, int indent, int level, std::string& out) {
  auto newline = [&](int at) {
    if (indent <= 0) return;
    out += '\n';
    out.append(static_cast<size_t>(indent * at), ' ');
  };
  switch (v.kind()) {
    case JsonValue::Kind::kNull: out += "null"; break;
    case JsonValue::Kind::kBool: out += v.bool_value() ? "true" : "false"; break;
    case JsonValue::Kind::kNumber: out += v.text(); break;
    case JsonValue::Kind::kString: AppendJsonString(out, v.text()); break;
    case JsonValue::Kind::kArray: {
      if (v.items().empty()) {
        out += "[]";
        break;
      }
      out += '[';
      for (size_t i = 0; i < v.items().size(); ++i) {
        if (i) out += ',';
        newline(level + 1);
        Write(v.items()[i], indent, level + 1, out);
      }
      newline(level);
      out += ']';
      break;
    }
    case JsonValue::Kind::kObject: {
      if (v.members().empty()) {
        out += "{}";
        break;
      }
      out += '{';
      for (size_t i = 0; i < v.members().size(); ++i) {
        if (i) out += ',';
        newline(level + 1);
        AppendJsonString(out, v.members()[i].first);
        out += indent > 0 ? ": " : ":";
        Write(v.members()[i].second, indent, level + 1, out);
      }
      newline(level);
      out += '}';
      break;
    }
  }
}

}  // namespace

JsonValue JsonValue::Bool(bool b) {
  JsonValue v;
  v.kind_ = Kind::kBool;
  v.bool_ = b;
  return v;
}
JsonValue JsonValue::Number(std::string text) {
  JsonValue v;
  v.kind_ = Kind::kNumber;
  v.text_ = std::move(text);
  return v;
}
JsonValue JsonValue::Integer(int64_t n) { return Number(std::to_string(n)); }
JsonValue JsonValue::String(std::string s) {
  JsonValue v;
  v.kind_ = Kind::kString;
  v.text_ = std::move(s);
  return v;
}
JsonValue JsonValue::Array(std::vector<JsonValue> items) {
  JsonValue v;
  v.kind_ = Kind::kArray;
  v.items_ = std::move(items);
  return v;
}
JsonValue JsonValue::Object(Members members) {
  JsonValue v;
  v.kind_ = Kind::kObject;
  for (auto& [k, value] : members) v.Set(std::move(k), std::move(value));
  return v;
}

std::optional<int64_t> JsonValue::integer() const {
  if (kind_ != Kind::kNumber || text_.find_first_of(".eE") != std::string::npos) return std::nullopt;
  int64_t n = 0;
  auto [ptr, ec] = std::from_chars(text_.data(), text_.data() + text_.size(), n);
  if (ec != std::errc() || ptr != text_.data() + text_.size()) return std::nullopt;
  return n;
}

const JsonValue* JsonValue::Find(std::string_view key) const {
  if (kind_ != Kind::kObject) return nullptr;
  for (const auto& [k, v] : members_) {
    if (k == key) return &v;
  }
  return nullptr;
}

void JsonValue::Set(std::string key, JsonValue value) {
  for (auto& [k, v] : members_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  members_.emplace_back(std::move(key), std::move(value));
}

void JsonValue::Erase(std::string_view key) {
  std::erase_if(members_, [&](const auto& m) { return m.first == key; });
}

bool JsonValue::operator==(const JsonValue& o) const {
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case Kind::kNull: return true;
    case Kind::kBool: return bool_ == o.bool_;
    case Kind::kNumber:
    case Kind::kString: return text_ == o.text_;
    case Kind::kArray: return items_ == o.items_;
    case Kind::kObject: {
      if (members_.size() != o.members_.size()) return false;
      for (const auto& [k, v] : members_) {
        const JsonValue* other = o.Find(k);
        if (!other || !(*other == v)) return false;
      }
      return true;
    }
  }
  return false;
}

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

std::string WriteJson(const JsonValue& value, int indent) {
  std::string out;
  Write(value, indent, 0, out);
  return out;
}

JsonValue MergePatch(const JsonValue& target, const JsonValue& patch) {
  if (!patch.is_object()) return patch;
  JsonValue result = target.is_object() ? target : JsonValue::Object();
  for (const auto& [key, value] : patch.members()) {
    if (value.is_null()) {
      result.Erase(key);
    } else {
      const JsonValue* existing = result.Find(key);
      result.Set(key, MergePatch(existing ? *existing : JsonValue(), value));
    }
  }
  return result;
}

}  // namespace cincinnati::kube
