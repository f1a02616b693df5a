#include "directory/cluster_json.h"

#include <fmt/format.h>

#include <boost/json.hpp>

#include "core/json.h"

namespace cincinnati::directory {
namespace {

Status Bad(std::string_view where, const std::string& why) {
  return Status::InvalidArgument(where.empty() ? why : fmt::format("{}: {}", where, why));
}

}  // namespace

Result<std::map<std::string, std::string>> LabelsFromJson(simdjson::dom::element element, std::string_view where) {
  std::map<std::string, std::string> labels;
  simdjson::dom::object object;
  if (element.get_object().get(object)) return Bad(where, "'labels' must be an object of strings");
  for (auto field : object) {
    std::string_view value;
    if (field.value.get_string().get(value)) return Bad(where, fmt::format("label '{}' must be a string", field.key));
    labels.emplace(std::string(field.key), std::string(value));
  }
  return labels;
}

Result<ClusterInfo> ClusterInfoFromJson(simdjson::dom::element element, std::string_view where) {
  if (!element.is_object()) return Bad(where, "expected a JSON object");
  ClusterInfo info;
  if (auto c = element["customer"]; c.error() != simdjson::NO_SUCH_FIELD) {
    std::string_view customer;
    if (c.get_string().get(customer)) return Bad(where, "'customer' must be a string");
    info.customer = std::string(customer);
  }
  if (auto l = element["labels"]; l.error() != simdjson::NO_SUCH_FIELD) {
    CINCINNATI_ASSIGN_OR_RETURN(info.labels, LabelsFromJson(l.value_unsafe(), where));
  }
  return info;
}

std::string LabelsToJson(const std::map<std::string, std::string>& labels) {
  boost::json::object out;
  for (const auto& [k, v] : labels) out[k] = v;
  return WriteJson(out);
}

}  // namespace cincinnati::directory
