// The JSON and text forms of an Explanation (explain.h).
#include <fmt/format.h>

#include <boost/json.hpp>

#include "core/json.h"
#include "graph-data/time_format.h"
#include "insight/explain.h"

namespace cincinnati::insight {
namespace {

boost::json::object ReasonJson(const Reason& r) {
  boost::json::object out{{"kind", r.kind}, {"message", r.message}};
  if (!r.step.empty()) out["step"] = r.step;
  if (!r.file.empty()) out["file"] = r.file;
  if (!r.rule.empty()) out["rule"] = r.rule;
  if (!r.risks.empty()) out["risks"] = boost::json::value_from(r.risks);
  if (r.visible_from) out["visibleFrom"] = graphdata::FormatDateTime(*r.visible_from);
  if (r.share_now) out["shareNow"] = *r.share_now;
  if (r.complete_at) out["completeAt"] = graphdata::FormatDateTime(*r.complete_at);
  return out;
}

}  // namespace

std::string ExplanationJson(const Explanation& e) {
  boost::json::array edges;
  for (const EdgeExplanation& edge : e.edges) {
    boost::json::array reasons;
    for (const Reason& r : edge.reasons) reasons.push_back(ReasonJson(r));
    edges.push_back(boost::json::object{{"from", edge.from},
                                        {"to", edge.to},
                                        {"verdict", VerdictName(edge.verdict)},
                                        {"offered", edge.verdict == Verdict::kOffered},
                                        {"reasons", std::move(reasons)}});
  }
  boost::json::object out{{"channel", e.channel}, {"arch", e.arch}, {"version", e.version}, {"edges", std::move(edges)}};
  if (!e.stop.empty()) {
    out["stop"] = e.stop;
    out["message"] = e.message;
  }
  return WriteJsonFixed(out, 4);  // the share, as it has always been given
}

std::string ExplanationText(const Explanation& e) {
  if (!e.stop.empty()) return e.message + "\n";
  std::string out = fmt::format("channel {}, arch {}, from {}\n", e.channel, e.arch, e.version);
  if (e.edges.empty()) out += "  no newer release in this channel\n";
  for (const EdgeExplanation& edge : e.edges) {
    out += fmt::format("{:>14} -> {:<16} {}\n", edge.from, edge.to, VerdictName(edge.verdict));
    for (const Reason& r : edge.reasons) {
      if (r.kind != "offered") out += fmt::format("{:>18}{}\n", "", r.message);
    }
  }
  return out;
}

}  // namespace cincinnati::insight
