// The JSON and text forms of an Explanation (explain.h).
#include <fmt/format.h>

#include "core/json_writer.h"
#include "graph-data/time_format.h"
#include "insight/explain.h"

namespace cincinnati::insight {
namespace {

void AppendReason(std::string& out, const Reason& r) {
  out += "{\"kind\":" + JsonString(r.kind) + ",\"message\":" + JsonString(r.message);
  if (!r.step.empty()) out += ",\"step\":" + JsonString(r.step);
  if (!r.file.empty()) out += ",\"file\":" + JsonString(r.file);
  if (!r.rule.empty()) out += ",\"rule\":" + JsonString(r.rule);
  if (!r.risks.empty()) {
    out += ",\"risks\":[";
    for (size_t i = 0; i < r.risks.size(); ++i) {
      if (i) out += ',';
      AppendJsonString(out, r.risks[i]);
    }
    out += "]";
  }
  if (r.visible_from) out += ",\"visibleFrom\":" + JsonString(graphdata::FormatDateTime(*r.visible_from));
  if (r.share_now) out += fmt::format(",\"shareNow\":{:.4f}", *r.share_now);
  if (r.complete_at) out += ",\"completeAt\":" + JsonString(graphdata::FormatDateTime(*r.complete_at));
  out += "}";
}

}  // namespace

std::string ExplanationJson(const Explanation& e) {
  std::string out = "{\"channel\":" + JsonString(e.channel) + ",\"arch\":" + JsonString(e.arch) +
                    ",\"version\":" + JsonString(e.version) + ",\"edges\":[";
  for (size_t i = 0; i < e.edges.size(); ++i) {
    const EdgeExplanation& edge = e.edges[i];
    out += fmt::format("{}{{\"from\":{},\"to\":{},\"verdict\":\"{}\",\"offered\":{},\"reasons\":[", i ? "," : "",
                       JsonString(edge.from), JsonString(edge.to), VerdictName(edge.verdict),
                       edge.verdict == Verdict::kOffered ? "true" : "false");
    for (size_t j = 0; j < edge.reasons.size(); ++j) {
      if (j) out += ",";
      AppendReason(out, edge.reasons[j]);
    }
    out += "]}";
  }
  out += "]";
  if (!e.stop.empty()) out += ",\"stop\":" + JsonString(e.stop) + ",\"message\":" + JsonString(e.message);
  return out + "}";
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
