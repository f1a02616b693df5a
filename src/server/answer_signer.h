// AnswerSigner: the Cincinnati-Signature header of a service's graph answers (issue 32;
// the format in core/answer_signature.h). A signature is made on the first request of
// each distinct answer (its ETag names its bytes) for a (channel, arch, generation) and
// kept, so that serving a signed answer costs a lookup; the kept signatures are dropped
// when the generation or the freshness moves on.
//
// Freshness: a signature expires `validity` after the moment the service last had word
// from its source (`fresh_as_of`: for a policy engine its last successful fetch from
// upstream; for a graph builder its last successful refresh), not after the request. A
// service cut off from its source keeps serving its last good graph, but its answers
// stop being accepted by checking agents `validity` later, so a frozen source cannot
// go unnoticed.
// Bounded: at most 16,384 kept signatures (about 300 bytes each), all dropped when full.
// Thread-safe.
#pragma once

#include <chrono>
#include <memory>
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

  // The header for `view` answering (channel, arch) as the query gave them, from graph
  // `generation`, fresh as of `fresh_as_of` (Unix seconds), signed at `now`.
  Result<std::string> HeaderFor(const View& view, std::string_view channel, std::string_view arch, uint64_t generation,
                                int64_t fresh_as_of, int64_t now);
  // The ids of the keys it signs with, for the logs.
  std::string KeyIds() const;
  std::chrono::seconds validity() const { return validity_; }

 private:
  static constexpr size_t kMaxKept = 16384;
  const std::vector<std::shared_ptr<const SigningKey>> keys_;
  const std::chrono::seconds validity_;
  std::shared_mutex mu_;
  uint64_t generation_ = 0;  // of the kept signatures, under mu_
  int64_t fresh_as_of_ = 0;
  std::unordered_map<std::string, std::string> kept_;  // ETag, channel, arch -> header
};

}  // namespace cincinnati::server
