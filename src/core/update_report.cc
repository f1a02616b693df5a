#include "core/update_report.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <boost/json.hpp>

#include <array>
#include <cctype>

#include "core/date_time.h"
#include "core/json.h"
#include "core/semver.h"

namespace cincinnati {
namespace {

Status Bad(std::string m) { return Status::InvalidArgument("update report: " + std::move(m)); }

bool IsHex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }
bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

bool IsUuid(std::string_view s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !IsHex(s[i])) return false;
  }
  return true;
}

// [a-z0-9._-], starting and ending with [a-z0-9]: arches and channels.
bool IsToken(std::string_view s, size_t max) {
  if (s.empty() || s.size() > max || !IsLowerAlnum(s.front()) || !IsLowerAlnum(s.back())) return false;
  for (char c : s) {
    if (!IsLowerAlnum(c) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

// A DNS-1123 subdomain of at most 253 characters, as a component's name is.
bool IsSubdomain(std::string_view s) {
  if (s.empty() || s.size() > 253 || !IsLowerAlnum(s.front()) || !IsLowerAlnum(s.back())) return false;
  for (char c : s) {
    if (!IsLowerAlnum(c) && c != '.' && c != '-') return false;
  }
  return true;
}

// CamelCase, as Kubernetes condition reasons are: [A-Z][A-Za-z0-9]{0,63}.
bool IsReason(std::string_view s) {
  if (s.empty() || s.size() > 64 || !(s[0] >= 'A' && s[0] <= 'Z')) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

Status CheckVersion(std::string_view key, std::string_view text) {
  if (text.empty() || text.size() > 128) return Bad(fmt::format("'{}' must be a version of 1 to 128 characters", key));
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) return Bad(fmt::format("'{}' must not contain blanks", key));
  }
  if (!Version::Parse(text).ok()) return Bad(fmt::format("'{}' is not a SemVer version: {}", key, text));
  // One spelling per release: with build metadata, one edge could be counted under many names.
  if (text.find('+') != std::string_view::npos) return Bad(fmt::format("'{}' must be a version without build metadata", key));
  return Status::OK();
}

int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

constexpr std::array<std::string_view, 11> kKeys = {"clusterID", "attempt", "from",      "to",     "arch",  "channel",
                                                    "result",    "component", "reason", "started", "ended"};

}  // namespace

bool IsReportChannel(std::string_view channel) { return IsToken(channel, 63); }

std::string_view UpdateResultName(UpdateResult r) {
  switch (r) {
    case UpdateResult::kFailed:
      return "Failed";
    case UpdateResult::kStarted:
      return "Started";
    case UpdateResult::kCompleted:
      break;
  }
  return "Completed";
}

Result<int64_t> ParseUtcSeconds(std::string_view t) {
  auto digits = [&](size_t at, size_t n) -> int {
    int v = 0;
    for (size_t i = at; i < at + n; ++i) {
      if (t[i] < '0' || t[i] > '9') return -1;
      v = v * 10 + (t[i] - '0');
    }
    return v;
  };
  if (t.size() != 20 || t[4] != '-' || t[7] != '-' || t[10] != 'T' || t[13] != ':' || t[16] != ':' || t[19] != 'Z') {
    return Bad(fmt::format("'{}' is not a date-time of the form 2026-01-03T04:05:06Z", t.substr(0, 40)));
  }
  const int y = digits(0, 4), mo = digits(5, 2), d = digits(8, 2), h = digits(11, 2), mi = digits(14, 2), s = digits(17, 2);
  static constexpr int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > kDays[mo - 1] || h > 23 || mi > 59 || s > 59 || h < 0 || mi < 0 || s < 0) {
    return Bad(fmt::format("'{}' is not a valid date-time", t));
  }
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (mo == 2 && d == 29 && !leap) return Bad(fmt::format("'{}' is not a valid date-time", t));
  return DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 + h * 3600 + mi * 60 + s;
}

Status ValidateUpdateReport(const UpdateReport& r) {
  if (!IsUuid(r.cluster_id)) return Bad("'clusterID' must be a UUID");
  for (char c : r.cluster_id) {
    if (c >= 'A' && c <= 'F') return Bad("'clusterID' must be lower case");
  }
  if (r.attempt.empty() || r.attempt.size() > 64) return Bad("'attempt' must be 1 to 64 hexadecimal digits");
  for (char c : r.attempt) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return Bad("'attempt' must be lower-case hexadecimal digits");
  }
  if (Status s = CheckVersion("from", r.from); !s.ok()) return s;
  if (Status s = CheckVersion("to", r.to); !s.ok()) return s;
  if (r.from == r.to) return Bad("'from' and 'to' are the same version");
  if (!IsToken(r.arch, 16)) return Bad("'arch' must be 1 to 16 characters of [a-z0-9._-]");
  if (!r.channel.empty() && !IsReportChannel(r.channel)) return Bad("'channel' must be empty or up to 63 characters of [a-z0-9._-]");
  if (!r.component.empty() && !IsSubdomain(r.component)) return Bad("'component' must be empty or a DNS-1123 subdomain");
  if (!r.reason.empty() && !IsReason(r.reason)) return Bad("'reason' must be empty or CamelCase of up to 64 letters and digits");
  if (r.result == UpdateResult::kFailed && r.reason.empty()) return Bad("a 'Failed' report needs a 'reason'");
  constexpr int64_t kYear10000 = 253402300800;
  if (r.started < 0 || r.ended < 0 || r.started >= kYear10000 || r.ended >= kYear10000) return Bad("a time is out of range");
  if (r.result == UpdateResult::kStarted) {
    if (r.ended != 0) return Bad("a 'Started' report has no 'ended'");
    if (!r.component.empty() || !r.reason.empty()) return Bad("a 'Started' report has no 'component' and no 'reason'");
    return Status::OK();
  }
  if (r.started > r.ended) return Bad("'started' is after 'ended'");
  return Status::OK();
}

std::string EncodeUpdateReport(const UpdateReport& r) {
  return WriteJson(boost::json::object{{"clusterID", r.cluster_id},
                                       {"attempt", r.attempt},
                                       {"from", r.from},
                                       {"to", r.to},
                                       {"arch", r.arch},
                                       {"channel", r.channel},
                                       {"result", UpdateResultName(r.result)},
                                       {"component", r.component},
                                       {"reason", r.reason},
                                       {"started", FormatUnixSeconds(r.started)},
                                       {"ended", r.result == UpdateResult::kStarted ? std::string() : FormatUnixSeconds(r.ended)}});
}

Result<UpdateReport> DecodeUpdateReport(std::string_view json) {
  if (json.size() > kMaxUpdateReportBytes) {
    return Status::TooLarge(fmt::format("update report: {} bytes, more than the {} allowed", json.size(), kMaxUpdateReportBytes));
  }
  simdjson::dom::parser parser;
  simdjson::padded_string padded(json.data(), json.size());
  simdjson::dom::element doc;
  if (auto err = parser.parse(padded).get(doc)) return Bad(fmt::format("invalid JSON: {}", simdjson::error_message(err)));
  simdjson::dom::object object;
  if (doc.get_object().get(object)) return Bad("must be a JSON object");
  std::array<std::string_view, kKeys.size()> values{};
  std::array<bool, kKeys.size()> seen{};
  for (auto field : object) {
    size_t i = 0;
    while (i < kKeys.size() && kKeys[i] != field.key) ++i;
    if (i == kKeys.size()) return Bad(fmt::format("unknown key '{}'", field.key.substr(0, 64)));
    if (seen[i]) return Bad(fmt::format("'{}' is given twice", kKeys[i]));
    seen[i] = true;
    if (field.value.get_string().get(values[i])) return Bad(fmt::format("'{}' must be a string", kKeys[i]));
  }
  for (size_t i = 0; i < kKeys.size(); ++i) {
    if (!seen[i]) return Bad(fmt::format("'{}' is missing", kKeys[i]));
  }
  UpdateReport r;
  r.cluster_id = std::string(values[0]);
  for (char& c : r.cluster_id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  r.attempt = std::string(values[1]);
  r.from = std::string(values[2]);
  r.to = std::string(values[3]);
  r.arch = std::string(values[4]);
  r.channel = std::string(values[5]);
  if (values[6] == "Completed") {
    r.result = UpdateResult::kCompleted;
  } else if (values[6] == "Failed") {
    r.result = UpdateResult::kFailed;
  } else if (values[6] == "Started") {
    r.result = UpdateResult::kStarted;
  } else {
    return Bad("'result' must be 'Completed', 'Failed' or 'Started'");
  }
  r.component = std::string(values[7]);
  r.reason = std::string(values[8]);
  CINCINNATI_ASSIGN_OR_RETURN(r.started, ParseUtcSeconds(values[9]));
  if (r.result == UpdateResult::kStarted) {
    if (!values[10].empty()) return Bad("a 'Started' report's 'ended' must be \"\"");
  } else {
    CINCINNATI_ASSIGN_OR_RETURN(r.ended, ParseUtcSeconds(values[10]));
  }
  CINCINNATI_RETURN_IF_ERROR(ValidateUpdateReport(r));
  return r;
}

}  // namespace cincinnati
