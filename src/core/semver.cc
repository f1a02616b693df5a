#include "core/semver.h"

#include <charconv>

#include <fmt/format.h>

#include "core/strings.h"

namespace cincinnati {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlnum(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// Digits only, "0" or no leading zero, fits in uint64_t.
bool ParseNumber(std::string_view s, uint64_t* out) {
  if (s.empty() || (s.size() > 1 && s[0] == '0')) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (!IsDigit(c)) return false;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

Status Invalid(std::string_view input, std::string_view why) {
  return Status::InvalidArgument(fmt::format("invalid semantic version '{}': {}", Printable(input), why));
}

void AppendNumber(uint64_t n, std::string& out) {
  char digits[20];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, n);
  out.append(digits, end);
}

void AppendIdentifiers(const std::vector<Identifier>& ids, std::string& out) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += '.';
    if (ids[i].numeric) {
      AppendNumber(ids[i].number, out);
    } else {
      out += ids[i].text;
    }
  }
}

std::string JoinIdentifiers(const std::vector<Identifier>& ids) {
  std::string out;
  AppendIdentifiers(ids, out);
  return out;
}

}  // namespace

std::string Identifier::ToString() const { return numeric ? std::to_string(number) : text; }

std::strong_ordering Identifier::operator<=>(const Identifier& o) const {
  if (numeric && o.numeric) return number <=> o.number;
  if (numeric != o.numeric) return numeric ? std::strong_ordering::less : std::strong_ordering::greater;
  int c = text.compare(o.text);
  return c < 0 ? std::strong_ordering::less
               : (c > 0 ? std::strong_ordering::greater : std::strong_ordering::equal);
}

Result<std::vector<Identifier>> ParseIdentifiers(std::string_view text) {
  std::vector<Identifier> ids;
  size_t start = 0;
  while (true) {
    size_t dot = text.find('.', start);
    std::string_view part = text.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (part.empty()) return Status::InvalidArgument("empty identifier");
    for (char c : part) {
      if (!IsAlnum(c) && c != '-') {
        return Status::InvalidArgument(fmt::format("unexpected character '{}' in identifier '{}'", c, part));
      }
    }
    uint64_t n;
    ids.push_back(ParseNumber(part, &n) ? Identifier::Numeric(n) : Identifier::Text(std::string(part)));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return ids;
}

Result<Version> Version::Parse(std::string_view input) {
  std::string_view s = input;
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  if (s.empty()) return Invalid(input, "empty string");

  size_t plus = s.find('+');
  std::string_view core_pre = s.substr(0, plus);
  std::string_view build = plus == std::string_view::npos ? std::string_view() : s.substr(plus + 1);
  size_t dash = core_pre.find('-');
  std::string_view core = core_pre.substr(0, dash);
  std::string_view pre = dash == std::string_view::npos ? std::string_view() : core_pre.substr(dash + 1);

  Version v;
  uint64_t* fields[3] = {&v.major_, &v.minor_, &v.patch_};
  static constexpr const char* kNames[3] = {"major", "minor", "patch"};
  size_t pos = 0;
  for (int i = 0; i < 3; ++i) {
    size_t end = i < 2 ? core.find('.', pos) : core.size();
    if (end == std::string_view::npos) return Invalid(input, "expected MAJOR.MINOR.PATCH");
    std::string_view num = core.substr(pos, end - pos);
    if (!ParseNumber(num, fields[i])) {
      return Invalid(input, fmt::format("{} version '{}' is not a number without leading zeros", kNames[i], num));
    }
    pos = end + 1;
  }
  if (dash != std::string_view::npos) {
    auto ids = ParseIdentifiers(pre);
    if (!ids.ok()) return Invalid(input, "prerelease: " + ids.status().message());
    v.pre_ = std::move(ids).value();
  }
  if (plus != std::string_view::npos) {
    auto ids = ParseIdentifiers(build);
    if (!ids.ok()) return Invalid(input, "build metadata: " + ids.status().message());
    v.build_ = std::move(ids).value();
  }
  return v;
}

Version Version::WithBuild(std::vector<Identifier> build) const {
  Version v(major_, minor_, patch_);  // not a whole copy: the old build is dropped anyway
  v.pre_ = pre_;
  v.build_ = std::move(build);
  return v;
}

void Version::AppendWithoutBuild(std::string& out) const {
  AppendNumber(major_, out);
  out += '.';
  AppendNumber(minor_, out);
  out += '.';
  AppendNumber(patch_, out);
  if (!pre_.empty()) {
    out += '-';
    AppendIdentifiers(pre_, out);
  }
}

void Version::AppendBuild(std::string& out) const { AppendIdentifiers(build_, out); }

std::string Version::ToStringWithoutBuild() const {
  std::string out;
  AppendWithoutBuild(out);
  return out;
}

std::string Version::BuildString() const { return JoinIdentifiers(build_); }

std::string Version::ToString() const {
  std::string out;
  AppendWithoutBuild(out);
  if (!build_.empty()) {
    out += '+';
    AppendIdentifiers(build_, out);
  }
  return out;
}

bool Version::operator==(const Version& o) const {
  return major_ == o.major_ && minor_ == o.minor_ && patch_ == o.patch_ && pre_ == o.pre_;
}

std::strong_ordering Version::Compare(const Version& o) const {
  if (auto c = major_ <=> o.major_; c != 0) return c;
  if (auto c = minor_ <=> o.minor_; c != 0) return c;
  if (auto c = patch_ <=> o.patch_; c != 0) return c;
  // A release ranks above any of its prereleases.
  if (pre_.empty() || o.pre_.empty()) {
    if (pre_.empty() && o.pre_.empty()) return std::strong_ordering::equal;
    return pre_.empty() ? std::strong_ordering::greater : std::strong_ordering::less;
  }
  size_t n = std::min(pre_.size(), o.pre_.size());
  for (size_t i = 0; i < n; ++i) {
    if (auto c = pre_[i] <=> o.pre_[i]; c != 0) return c;
  }
  return pre_.size() <=> o.pre_.size();
}

bool VersionNameLess(std::string_view a, std::string_view b) {
  auto va = Version::Parse(a), vb = Version::Parse(b);
  return va.ok() && vb.ok() ? *va < *vb : a < b;
}

}  // namespace cincinnati
