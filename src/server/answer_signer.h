// AnswerSigner: the Cincinnati-Signature header of a service's graph answers (issue 32;
// the format in core/answer_signature.h). A signature is made on the first request of
// each distinct (answer, query, generation, freshness): the answer's ETag names its
// bytes. It is kept, so that serving a signed answer costs a lookup.
//
// Freshness: a signature expires `validity` after `fresh_as_of`, the moment the graph's
// source last vouched for it (a graph builder's last successful refresh, passed down a
// chain as Cincinnati-Graph-Fresh: each service takes the older of its own last fetch
// and its upstream's), not after the request. A service cut off from its source, or a
// graph builder whose refreshes fail, keeps serving its last good graph, but checking
// agents see its answers expire `validity` later.
//
// Bounded: at most 16,384 kept signatures (about 500 bytes each), in two halves: a
// lookup that hits the older half moves the entry to the newer one; when the newer half
// is full, the older is dropped. So what is asked often stays, and a flood of distinct
// queries (unknown channels) costs a signature each but evicts in turn. Thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <atomic>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/answer_signature.h"
#include "server/view_cache.h"

namespace cincinnati::server {

class AnswerSigner {
 public:
  AnswerSigner(std::vector<std::shared_ptr<const SigningKey>> keys, std::chrono::seconds validity);

  // The header for `view` answering `scope` (as the query gave it; the id is bound only
  // when `per_cluster`), from graph `generation`, fresh as of `fresh_as_of` (Unix
  // seconds), signed at `now`.
  Result<std::shared_ptr<const std::string>> HeaderFor(const View& view, const AnswerScope& scope, bool per_cluster, uint64_t generation,
                                                       int64_t fresh_as_of, int64_t now);
  // The ids of the keys it signs with, for the logs.
  std::string KeyIds() const;
  // Signatures made so far (each a SHA-256 of the answer and an Ed25519 signature per key).
  uint64_t signed_count() const { return signed_.load(std::memory_order_relaxed); }

 private:
  static constexpr size_t kHalf = 8192;
  // What a kept signature is for, compared whole on a lookup (the hash only finds it).
  struct Key {
    std::string etag, channel, arch, version, id;
    uint64_t generation = 0;
    int64_t fresh_as_of = 0;
    bool Matches(std::string_view etag, const AnswerScope& scope, std::string_view id, uint64_t generation, int64_t fresh_as_of) const;
  };
  struct Entry {
    Key key;
    std::shared_ptr<const std::string> header;
  };
  using Half = std::unordered_multimap<uint64_t, Entry>;
  static Half::const_iterator Find(const Half& half, uint64_t hash, std::string_view etag, const AnswerScope& scope, std::string_view id,
                                   uint64_t generation, int64_t fresh_as_of);

  const std::vector<std::shared_ptr<const SigningKey>> keys_;
  const std::chrono::seconds validity_;
  std::shared_mutex mu_;
  Half newer_, older_;  // under mu_
  std::atomic<uint64_t> signed_{0};
};

}  // namespace cincinnati::server
