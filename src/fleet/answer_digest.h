// What a simulated cluster takes from the service's answers, and the versions it knows.
//
//  - VersionTable interns version names as 16-bit indices (a cluster keeps two of
//    them), in SemVer order on demand. At most 65,534 names; more is TooLarge.
//  - DigestAnswer reads a graph answer (the JSON of {prefix}/graph) into, per node,
//    its newest recommended update: the newest target of its `edges`. Conditional edges
//    are not recommended updates (an automatic brake's risk matches Always), so they
//    are not read. Strict and capped: at most 100,000 nodes and 1,000,000 edges, edge
//    indices in range, every node a SemVer version.
//  - AnswerCache maps an answer's ETag (equal ETags mean equal bytes) to its digest,
//    so that each distinct answer is parsed once however many clusters get it. It holds
//    at most `capacity` digests and starts afresh when full (ETags change with every span
//    of phased rollouts, so old ones are dead weight).
// Not thread-safe: the simulation's one thread owns them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/semver.h"
#include "core/status.h"

namespace cincinnati::fleet {

inline constexpr uint16_t kNoVersion = 0xffff;

class VersionTable {
 public:
  Result<uint16_t> Intern(std::string_view name);
  uint16_t Find(std::string_view name) const;  // kNoVersion when unknown
  const std::string& Name(uint16_t v) const { return names_[v]; }
  bool Newer(uint16_t a, uint16_t b) const { return versions_[b] < versions_[a]; }
  size_t size() const { return names_.size(); }
  // Every index, oldest version first.
  std::vector<uint16_t> Sorted() const;

 private:
  std::unordered_map<std::string, uint16_t> index_;
  std::vector<std::string> names_;
  std::vector<Version> versions_;
};

struct AnswerDigest {
  std::vector<uint16_t> nodes;   // the answer's releases
  std::vector<uint16_t> newest;  // by version index; kNoVersion: no recommended update
  uint16_t NewestFrom(uint16_t v) const { return v < newest.size() ? newest[v] : kNoVersion; }
};

Result<std::shared_ptr<const AnswerDigest>> DigestAnswer(std::string_view json, VersionTable& versions);

class AnswerCache {
 public:
  explicit AnswerCache(size_t capacity = 1 << 16) : capacity_(capacity) {}
  std::shared_ptr<const AnswerDigest> Find(std::string_view etag) const;
  void Put(std::string etag, std::shared_ptr<const AnswerDigest> digest);
  uint64_t parsed() const { return parsed_; }

 private:
  size_t capacity_;
  uint64_t parsed_ = 0;
  std::unordered_map<std::string, std::shared_ptr<const AnswerDigest>> map_;
};

}  // namespace cincinnati::fleet
