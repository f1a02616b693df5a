// Managing files of graph-data schema 2.x (the phased-rollouts design): each file under
// channels/ names the channels it manages and when each release joins them.
//
//   channels:                        # required, non-empty
//   - name: stable-4.4               # required; unique across all managing files
//     target: 4.4.3                  # optional channel target, one of `versions`
//     phasedRollouts:                # optional
//     - {fromVersion: patch, duration: P2D}
//     - {fromVersion: minor, duration: P14D}
//     - {duration: P1D}              # no fromVersion: the default, lowest precedence
//   versions:                        # optional
//   - {name: 4.4.3, start: 2020-05-12T00:00Z, locked: true}   # locked is optional
//
// The same criterion twice in one channel is invalid; an unknown fromVersion is valid
// but never matches. Unknown keys are errors. Every error names the entry.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "core/semver.h"
#include "core/status.h"

namespace cincinnati::graphdata {

struct PhasedRule {
  std::optional<std::string> from_version;  // "minor", "patch", another (never matches), or none (default)
  int64_t duration_seconds = 0;
};

struct ManagedChannel {
  std::string name;
  std::vector<PhasedRule> rules;
  std::optional<Version> target;  // optional explicit target; must be in `versions`
};

struct VersionStart {
  Version version;
  int64_t start = 0;  // Unix seconds
  bool locked = false;
};

struct ManagingFile {
  std::vector<ManagedChannel> channels;
  std::vector<VersionStart> versions;
};

Result<ManagingFile> DecodeManagingFile(const YAML::Node& doc);

}  // namespace cincinnati::graphdata
