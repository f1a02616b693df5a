// The JSON and text forms of a PathAnswer (update_paths.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/json_writer.h"
#include "insight/update_paths.h"

namespace cincinnati::insight {
namespace {

std::string Strings(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    AppendJsonString(out, items[i]);
  }
  return out + "]";
}

std::string PathObject(const UpdatePath& path) {
  std::string out = fmt::format("{{\"hops\":{},\"releases\":[", path.hops.size());
  for (size_t i = 0; i < path.hops.size(); ++i) {
    if (i == 0) AppendJsonString(out, path.hops[i].from);
    out += ',';
    AppendJsonString(out, path.hops[i].to);
  }
  out += "],\"edges\":[";
  for (size_t i = 0; i < path.hops.size(); ++i) {
    const PathHop& h = path.hops[i];
    out += fmt::format("{}{{\"from\":{},\"to\":{},\"channel\":{},\"risks\":{}}}", i ? "," : "", JsonString(h.from),
                       JsonString(h.to), JsonString(h.channel), Strings(h.risks));
  }
  return out + "]}";
}

std::string HopLine(const PathHop& h, std::string_view note = {}) {
  std::string risks = h.risks.empty() ? "recommended" : fmt::format("risks: {}", fmt::join(h.risks, ", "));
  return fmt::format("  {:>14} -> {:<16} {:<14} {}{}\n", h.from, h.to, h.channel, risks, note);
}

}  // namespace

std::string PathJson(const PathAnswer& a) {
  std::string out = fmt::format("{{\"from\":{},\"to\":{},\"channels\":{},\"accepted\":{},\"found\":{},\"paths\":[",
                                JsonString(a.from), JsonString(a.to), Strings(a.channels), Strings(a.accepted_risks),
                                a.paths.empty() ? "false" : "true");
  for (size_t i = 0; i < a.paths.size(); ++i) {
    if (i) out += ',';
    out += PathObject(a.paths[i]);
  }
  out += "]";
  if (!a.stop.empty()) {
    out += ",\"stop\":" + JsonString(a.stop) + ",\"message\":" + JsonString(a.message);
    if (!a.needed_risks.empty()) out += ",\"neededRisks\":" + Strings(a.needed_risks);
    if (a.would_take) out += ",\"wouldTake\":" + PathObject(*a.would_take);
    if (!a.blocked.empty()) {
      out += ",\"blocked\":[";
      for (size_t i = 0; i < a.blocked.size(); ++i) {
        const BlockedHop& b = a.blocked[i];
        out += fmt::format("{}{{\"from\":{},\"to\":{},\"channel\":{},\"why\":{}}}", i ? "," : "", JsonString(b.from),
                           JsonString(b.to), JsonString(b.channel), JsonString(b.why));
      }
      out += "]";
    }
  }
  if (a.truncated) out += ",\"truncated\":true";
  return out + "}";
}

std::string PathText(const PathAnswer& a) {
  std::string out;
  if (a.paths.empty()) {
    out = fmt::format("no path from {} to {}: {}\n", a.from, a.to, a.message);
    if (a.would_take) {
      out += a.stop == "blocked" ? "the shortest path if the blocked edges were open:\n"
                                 : "the shortest path with those risks accepted:\n";
      for (const PathHop& h : a.would_take->hops) out += HopLine(h);
    }
    return out;
  }
  for (size_t i = 0; i < a.paths.size(); ++i) {
    const UpdatePath& p = a.paths[i];
    out += fmt::format("{}path {}: {} hop{}\n", i ? "\n" : "", i + 1, p.hops.size(), p.hops.size() == 1 ? "" : "s");
    for (const PathHop& h : p.hops) out += HopLine(h);
  }
  if (a.truncated) out += "(the search stopped early: more paths may exist)\n";
  return out;
}

}  // namespace cincinnati::insight
