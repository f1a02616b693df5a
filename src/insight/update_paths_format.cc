// The JSON and text forms of a PathAnswer (update_paths.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <boost/json.hpp>

#include "core/json.h"
#include "insight/update_paths.h"

namespace cincinnati::insight {
namespace {

boost::json::value Strings(const std::vector<std::string>& items) { return boost::json::value_from(items); }

boost::json::object PathObject(const UpdatePath& path) {
  boost::json::array releases;
  boost::json::array edges;
  for (const PathHop& h : path.hops) {
    if (releases.empty()) releases.push_back(boost::json::value(h.from));
    releases.push_back(boost::json::value(h.to));
    edges.push_back(boost::json::object{{"from", h.from}, {"to", h.to}, {"channel", h.channel}, {"risks", Strings(h.risks)}});
  }
  return boost::json::object{{"hops", path.hops.size()}, {"releases", std::move(releases)}, {"edges", std::move(edges)}};
}

std::string HopLine(const PathHop& h, std::string_view note = {}) {
  std::string risks = h.risks.empty() ? "recommended" : fmt::format("risks: {}", fmt::join(h.risks, ", "));
  return fmt::format("  {:>14} -> {:<16} {:<14} {}{}\n", h.from, h.to, h.channel, risks, note);
}

}  // namespace

std::string PathJson(const PathAnswer& a) {
  boost::json::array paths;
  for (const UpdatePath& path : a.paths) paths.push_back(PathObject(path));
  boost::json::object out{{"from", a.from},
                          {"to", a.to},
                          {"channels", Strings(a.channels)},
                          {"accepted", Strings(a.accepted_risks)},
                          {"found", !a.paths.empty()},
                          {"paths", std::move(paths)}};
  if (!a.stop.empty()) {
    out["stop"] = a.stop;
    out["message"] = a.message;
    if (!a.needed_risks.empty()) out["neededRisks"] = Strings(a.needed_risks);
    if (a.would_take) out["wouldTake"] = PathObject(*a.would_take);
    if (!a.blocked.empty()) {
      boost::json::array blocked;
      for (const BlockedHop& b : a.blocked) {
        blocked.push_back(boost::json::object{{"from", b.from}, {"to", b.to}, {"channel", b.channel}, {"why", b.why}});
      }
      out["blocked"] = std::move(blocked);
    }
  }
  if (a.truncated) out["truncated"] = true;
  return WriteJson(out);
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
