#include "core/json.h"

// Boost.JSON is compiled here, once: Debian ships its headers but not libboost-json, so
// its sources are included in this one file of the lowest library (every other file
// includes <boost/json.hpp> only).
#include <boost/json/src.hpp>

#include <fmt/format.h>
#include <simdjson.h>

#include <iterator>

namespace cincinnati {
namespace {

// decimals < 0: the shortest form.
void AppendDouble(std::string& out, double d, int decimals) {
  if (decimals >= 0) {
    fmt::format_to(std::back_inserter(out), "{:.{}f}", d, decimals);
    return;
  }
  char buffer[32];
  char* end = simdjson::internal::to_chars(buffer, buffer + sizeof buffer, d);
  out.append(buffer, end);
}

void Write(const boost::json::value& v, int indent, int decimals, int level, std::string& out) {
  auto newline = [&](int at) {
    if (indent <= 0) return;
    out += '\n';
    out.append(static_cast<size_t>(indent * at), ' ');
  };
  switch (v.kind()) {
    case boost::json::kind::null: out += "null"; break;
    case boost::json::kind::bool_: out += v.get_bool() ? "true" : "false"; break;
    case boost::json::kind::int64: out += std::to_string(v.get_int64()); break;
    case boost::json::kind::uint64: out += std::to_string(v.get_uint64()); break;
    case boost::json::kind::double_: AppendDouble(out, v.get_double(), decimals); break;
    case boost::json::kind::string: out += boost::json::serialize(v.get_string()); break;
    case boost::json::kind::array: {
      const boost::json::array& items = v.get_array();
      if (items.empty()) {
        out += "[]";
        break;
      }
      out += '[';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += ',';
        newline(level + 1);
        Write(items[i], indent, decimals, level + 1, out);
      }
      newline(level);
      out += ']';
      break;
    }
    case boost::json::kind::object: {
      const boost::json::object& members = v.get_object();
      if (members.empty()) {
        out += "{}";
        break;
      }
      out += '{';
      bool first = true;
      for (const auto& member : members) {
        if (!first) out += ',';
        first = false;
        newline(level + 1);
        out += boost::json::serialize(member.key());
        out += indent > 0 ? ": " : ":";
        Write(member.value(), indent, decimals, level + 1, out);
      }
      newline(level);
      out += '}';
      break;
    }
  }
}

}  // namespace

std::string WriteJson(const boost::json::value& value, int indent) {
  std::string out;
  Write(value, indent, -1, 0, out);
  return out;
}

std::string WriteJsonFixed(const boost::json::value& value, int decimals) {
  std::string out;
  Write(value, 0, decimals, 0, out);
  return out;
}

}  // namespace cincinnati
