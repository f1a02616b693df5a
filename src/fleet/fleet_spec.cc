#include "fleet/fleet_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "core/semver.h"
#include "core/strings.h"
#include "core/update_report.h"

namespace cincinnati::fleet {
namespace {

Status Bad(std::string_view what, std::string_view text, std::string_view expected) {
  return Status::InvalidArgument(fmt::format("{} '{}': {}", what, Printable(text), expected));
}

// A decimal number with an optional fraction ("20", "12.5"); nullopt-like -1 when not one.
double ParseDecimal(std::string_view text) {
  if (text.empty() || text.size() > 32) return -1;
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, std::chars_format::fixed);
  if (ec != std::errc() || end != text.data() + text.size() || !(v >= 0) || !std::isfinite(v)) return -1;
  return v;
}

// "20%" or "20 %" -> 0.2; -1 when not a percentage in [0, 100].
double ParsePercent(std::string_view text) {
  text = TrimWhitespace(text);
  if (text.empty() || text.back() != '%') return -1;
  const double v = ParseDecimal(TrimWhitespace(text.substr(0, text.size() - 1)));
  return v >= 0 && v <= 100 ? v / 100 : -1;
}

}  // namespace

Result<int64_t> ParseSimDuration(std::string_view text) {
  const std::string_view original = text;
  text = TrimWhitespace(text);
  constexpr const char* kExpected = "a duration such as 0, 90s, 30m, 6h, 2d or 1h30m (at most 366d)";
  if (text == "0") return int64_t{0};
  if (text.empty() || text.size() > 32) return Bad("duration", original, kExpected);
  int64_t total = 0;
  while (!text.empty()) {
    int64_t n = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc() || end == text.data() + text.size() || n < 0 || n > kMaxSimSeconds) {
      return Bad("duration", original, kExpected);
    }
    const char unit = *end;
    const int64_t scale = unit == 's' ? 1 : unit == 'm' ? 60 : unit == 'h' ? 3600 : unit == 'd' ? 86400 : 0;
    if (scale == 0) return Bad("duration", original, kExpected);
    total += n * scale;
    if (total > kMaxSimSeconds) return Bad("duration", original, kExpected);
    text.remove_prefix(static_cast<size_t>(end - text.data()) + 1);
  }
  return total;
}

std::string FormatSimDuration(int64_t s) {
  if (s <= 0) return "0s";
  std::string out;
  if (s >= 86400) out += fmt::format("{}d", s / 86400);
  if (s % 86400 >= 3600) out += fmt::format("{}h", s % 86400 / 3600);
  if (s % 3600 >= 60) out += fmt::format("{}m", s % 3600 / 60);
  if (s % 60) out += fmt::format("{}s", s % 60);
  return out;
}

int64_t Distribution::Sample(double u) const {
  double v = static_cast<double>(a);
  if (kind == Kind::kExponential) v = -static_cast<double>(a) * std::log1p(-std::clamp(u, 0.0, 0.999999999));
  if (kind == Kind::kUniform) v = static_cast<double>(a) + u * static_cast<double>(b - a);
  return std::clamp<int64_t>(static_cast<int64_t>(std::llround(v)), 0, kMaxSimSeconds);
}

std::string Distribution::ToString() const {
  switch (kind) {
    case Kind::kFixed: return FormatSimDuration(a);
    case Kind::kExponential: return "exp:" + FormatSimDuration(a);
    case Kind::kUniform: return "uniform:" + FormatSimDuration(a) + "-" + FormatSimDuration(b);
  }
  return "";
}

Result<Distribution> ParseDistribution(std::string_view text) {
  const std::string_view t = TrimWhitespace(text);
  constexpr const char* kExpected = "a duration (6h), exp:MEAN (exp:6h) or uniform:MIN-MAX (uniform:0h-48h)";
  Distribution d;
  std::string_view rest = t;
  if (t.starts_with("exp:")) {
    d.kind = Distribution::Kind::kExponential;
    rest = t.substr(4);
  } else if (t.starts_with("uniform:")) {
    d.kind = Distribution::Kind::kUniform;
    rest = t.substr(8);
  }
  if (d.kind == Distribution::Kind::kUniform) {
    const size_t dash = rest.find('-');
    if (dash == std::string_view::npos) return Bad("distribution", text, kExpected);
    auto lo = ParseSimDuration(rest.substr(0, dash));
    auto hi = ParseSimDuration(rest.substr(dash + 1));
    if (!lo.ok() || !hi.ok() || *lo > *hi) return Bad("distribution", text, kExpected);
    d.a = *lo;
    d.b = *hi;
    return d;
  }
  auto v = ParseSimDuration(rest);
  if (!v.ok()) return Bad("distribution", text, kExpected);
  d.a = d.b = *v;
  return d;
}

Result<FailureRule> ParseFailureRule(std::string_view text) {
  constexpr const char* kExpected =
      "FROM->TO: RATE%[, component=NAME][, reason=CamelCase], e.g. '4.13.1->4.13.2: 20%, component=network'";
  std::vector<std::string_view> parts = Split(text, ',');
  const std::string_view head = parts.empty() ? std::string_view() : parts[0];
  const size_t arrow = head.find("->"), colon = head.find(':', arrow == std::string_view::npos ? 0 : arrow);
  if (text.size() > 512 || arrow == std::string_view::npos || colon == std::string_view::npos) {
    return Bad("--failure", text, kExpected);
  }
  FailureRule rule;
  rule.from = std::string(TrimWhitespace(head.substr(0, arrow)));
  rule.to = std::string(TrimWhitespace(head.substr(arrow + 2, colon - arrow - 2)));
  rule.rate = ParsePercent(head.substr(colon + 1));
  if (!Version::Parse(rule.from).ok() || !Version::Parse(rule.to).ok() || rule.from == rule.to) {
    return Bad("--failure", text, "FROM and TO must be two different versions; expected " + std::string(kExpected));
  }
  if (rule.rate < 0) return Bad("--failure", text, "the rate must be a percentage from 0% to 100%");
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string_view option = TrimWhitespace(parts[i]);
    const size_t eq = option.find('=');
    const std::string_view key = option.substr(0, eq);
    const std::string value(eq == std::string_view::npos ? "" : TrimWhitespace(option.substr(eq + 1)));
    if (key == "component") {
      rule.component = value;
    } else if (key == "reason") {
      rule.reason = value;
    } else {
      return Bad("--failure", text, fmt::format("unknown option '{}'; expected {}", Printable(option), kExpected));
    }
  }
  // The rule becomes reports: check it as the service will, now rather than mid-run.
  UpdateReport probe{.cluster_id = "00000000-0000-4000-8000-000000000000", .attempt = "1", .from = rule.from, .to = rule.to,
                     .arch = "amd64", .channel = "stable", .result = UpdateResult::kFailed, .component = rule.component,
                     .reason = rule.reason};
  if (Status st = ValidateUpdateReport(probe); !st.ok()) return Bad("--failure", text, st.message());
  return rule;
}

Result<std::vector<VersionShare>> ParseStartVersions(std::string_view text) {
  constexpr const char* kExpected = "VERSION=SHARE% items separated by commas, adding up to 100%, e.g. 4.13.1=70%,4.13.0=30%";
  std::vector<VersionShare> out;
  double sum = 0;
  if (text.size() > 4096) return Bad("--start-versions", text.substr(0, 64), kExpected);
  for (std::string_view item : Split(text, ',')) {
    item = TrimWhitespace(item);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) return Bad("--start-versions", text, kExpected);
    VersionShare v{std::string(TrimWhitespace(item.substr(0, eq))), ParsePercent(item.substr(eq + 1))};
    if (!Version::Parse(v.version).ok() || v.share < 0) return Bad("--start-versions", text, kExpected);
    for (const VersionShare& other : out) {
      if (other.version == v.version) return Bad("--start-versions", text, "version " + v.version + " is listed twice");
    }
    sum += v.share;
    out.push_back(std::move(v));
  }
  if (out.empty() || std::abs(sum - 1) > 0.005) {
    return Bad("--start-versions", text, fmt::format("the shares add up to {:.1f}%; expected {}", sum * 100, kExpected));
  }
  for (VersionShare& v : out) v.share /= sum;
  return out;
}

Status ValidateSpec(const SimulationSpec& s) {
  auto bad = [](std::string m) { return Status::InvalidArgument(std::move(m)); };
  if (s.service_url.empty() == (s.releases.empty() || s.graph_data.empty())) {
    return bad("give either --service URL or both --releases and --graph-data");
  }
  if (!s.service_url.empty() && (s.epoch <= 0 || s.start <= 0)) {
    return bad("--service needs --start, --time-scale and --epoch: the running service's clock flags");
  }
  if (s.channel.empty()) return bad("--channel is required");
  if (s.start_versions.empty()) return bad("--start-versions is required");
  if (!(s.time_scale > 0) || s.time_scale > 1e6) return bad("--time-scale: a number greater than 0 and at most 1000000");
  if (s.seconds <= 0 || s.seconds > kMaxSimSeconds) return bad("--days: more than 0 and at most 366");
  if (s.clusters == 0 || s.clusters > kMaxClusters) return bad(fmt::format("--clusters: from 1 to {}", kMaxClusters));
  if (!(s.auto_update_share >= 0 && s.auto_update_share <= 1)) return bad("--auto-update-share: from 0 to 1");
  if (s.probe_every < 1 || s.probe_every > 86400) return bad("--probe-every: from 1s to 1d");
  if (s.parallel < 1 || s.parallel > 1024) return bad("--parallel: from 1 to 1024");
  if (s.out_dir.empty()) return bad("--out is required");
  for (size_t i = 0; i < s.failures.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (s.failures[i].from == s.failures[j].from && s.failures[i].to == s.failures[j].to) {
        return bad(fmt::format("--failure: the edge {} -> {} is given twice", s.failures[i].from, s.failures[i].to));
      }
    }
  }
  return Status::OK();
}

}  // namespace cincinnati::fleet
