#include "fleet/service_documents.h"

#include <fmt/format.h>
#include <simdjson.h>

#include "graph-data/time_format.h"

namespace cincinnati::fleet {
namespace {

constexpr size_t kMaxEntries = 100'000;

Status Bad(std::string_view document, std::string_view what) {
  return Status::InvalidArgument(fmt::format("{}: {}", document, what));
}

Result<int64_t> TimeField(simdjson::dom::object o, const char* key, std::string_view document) {
  std::string_view text;
  if (o[key].get(text)) return Bad(document, fmt::format("no '{}' string", key));
  auto t = graphdata::ParseDateTime(text);
  if (!t.ok()) return Bad(document, fmt::format("'{}': {}", key, t.status().message()));
  return *t;
}

Result<std::string> TextField(simdjson::dom::object o, const char* key, std::string_view document) {
  std::string_view text;
  if (o[key].get(text)) return Bad(document, fmt::format("no '{}' string", key));
  return std::string(text);
}

}  // namespace

Result<RolloutsDocument> ParseRollouts(std::string_view json) {
  constexpr std::string_view kDoc = "rollouts document";
  simdjson::dom::parser parser;
  simdjson::padded_string padded(json.data(), json.size());
  simdjson::dom::object top;
  if (auto err = parser.parse(padded).get(top)) return Bad(kDoc, simdjson::error_message(err));
  RolloutsDocument doc;
  CINCINNATI_ASSIGN_OR_RETURN(doc.now, TimeField(top, "now", kDoc));
  simdjson::dom::array rollouts;
  if (top["rollouts"].get(rollouts)) return Bad(kDoc, "no 'rollouts' array");
  if (rollouts.size() > kMaxEntries) return Status::TooLarge("rollouts document: too many rollouts");
  for (simdjson::dom::element e : rollouts) {
    simdjson::dom::object o;
    if (e.get(o)) return Bad(kDoc, "a rollout that is not an object");
    PhasedWindow w;
    CINCINNATI_ASSIGN_OR_RETURN(w.from, TextField(o, "from", kDoc));
    CINCINNATI_ASSIGN_OR_RETURN(w.to, TextField(o, "to", kDoc));
    CINCINNATI_ASSIGN_OR_RETURN(w.begin, TimeField(o, "begin", kDoc));
    CINCINNATI_ASSIGN_OR_RETURN(w.complete_at, TimeField(o, "completeAt", kDoc));
    if (w.complete_at < w.begin) return Bad(kDoc, "a rollout that completes before it begins");
    doc.windows.push_back(std::move(w));
  }
  return doc;
}

Result<std::vector<ServiceBrake>> ParseBrakes(std::string_view json) {
  constexpr std::string_view kDoc = "brakes document";
  simdjson::dom::parser parser;
  simdjson::padded_string padded(json.data(), json.size());
  simdjson::dom::object top;
  if (auto err = parser.parse(padded).get(top)) return Bad(kDoc, simdjson::error_message(err));
  simdjson::dom::array brakes;
  if (top["brakes"].get(brakes)) return Bad(kDoc, "no 'brakes' array");
  if (brakes.size() > kMaxEntries) return Status::TooLarge("brakes document: too many brakes");
  std::vector<ServiceBrake> out;
  for (simdjson::dom::element e : brakes) {
    simdjson::dom::object o;
    if (e.get(o)) return Bad(kDoc, "a brake that is not an object");
    ServiceBrake b;
    CINCINNATI_ASSIGN_OR_RETURN(b.from, TextField(o, "from", kDoc));
    CINCINNATI_ASSIGN_OR_RETURN(b.to, TextField(o, "to", kDoc));
    CINCINNATI_ASSIGN_OR_RETURN(b.state, TextField(o, "state", kDoc));
    CINCINNATI_ASSIGN_OR_RETURN(b.since, TimeField(o, "since", kDoc));
    CINCINNATI_ASSIGN_OR_RETURN(b.first_failure, TimeField(o, "firstFailure", kDoc));
    if (o["clusters"].get(b.clusters) || o["failures"].get(b.failures)) return Bad(kDoc, "a brake without its counts");
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace cincinnati::fleet
