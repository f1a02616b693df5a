// Version: a SemVer 2.0.0 version as the reference (semver 0.11) reads it.
//
// Parse accepts optional surrounding whitespace, MAJOR.MINOR.PATCH with no leading
// zeros, an optional -PRERELEASE and +BUILD of dot-separated [0-9A-Za-z-] identifiers.
// A prerelease identifier such as "01" is kept as text, as the reference does.
// ToString() is the normalized display form used as node key everywhere.
// operator== ignores build metadata (the reference's equality); Compare() is SemVer
// precedence (build ignored too); SameIncludingBuild() compares everything.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace cincinnati {

struct Identifier {
  bool numeric = false;
  uint64_t number = 0;
  std::string text;  // used when !numeric

  static Identifier Numeric(uint64_t n) { return {true, n, {}}; }
  static Identifier Text(std::string s) { return {false, 0, std::move(s)}; }
  std::string ToString() const;
  bool operator==(const Identifier& o) const {
    return numeric == o.numeric && (numeric ? number == o.number : text == o.text);
  }
  // SemVer precedence: numeric identifiers sort below text ones.
  std::strong_ordering operator<=>(const Identifier& o) const;
};

class Version {
 public:
  Version() = default;
  Version(uint64_t major, uint64_t minor, uint64_t patch)
      : major_(major), minor_(minor), patch_(patch) {}

  static Result<Version> Parse(std::string_view text);

  uint64_t major() const { return major_; }
  uint64_t minor() const { return minor_; }
  uint64_t patch() const { return patch_; }
  const std::vector<Identifier>& pre() const { return pre_; }
  const std::vector<Identifier>& build() const { return build_; }
  void set_pre(std::vector<Identifier> pre) { pre_ = std::move(pre); }
  void set_build(std::vector<Identifier> build) { build_ = std::move(build); }

  // Copy with the build metadata replaced (empty vector clears it).
  Version WithBuild(std::vector<Identifier> build) const;
  Version WithoutBuild() const { return WithBuild({}); }

  std::string ToString() const;
  // "M.m.p[-pre]": the display form without build metadata.
  std::string ToStringWithoutBuild() const;
  // Build identifiers joined by ".", empty when there is none.
  std::string BuildString() const;
  // The same forms appended to `out` (no temporary strings: for building many keys).
  void AppendWithoutBuild(std::string& out) const;
  void AppendBuild(std::string& out) const;

  bool operator==(const Version& o) const;  // ignores build metadata
  bool SameIncludingBuild(const Version& o) const { return *this == o && build_ == o.build_; }
  std::strong_ordering Compare(const Version& o) const;  // SemVer precedence
  bool operator<(const Version& o) const { return Compare(o) < 0; }

 private:
  uint64_t major_ = 0, minor_ = 0, patch_ = 0;
  std::vector<Identifier> pre_;
  std::vector<Identifier> build_;
};

// Release names in SemVer precedence; a pair where either name is no version compares
// as text. For sorting what a message lists.
bool VersionNameLess(std::string_view a, std::string_view b);

// Parses a dot-separated identifier list such as "amd64" or "rc.1".
Result<std::vector<Identifier>> ParseIdentifiers(std::string_view text);

}  // namespace cincinnati
