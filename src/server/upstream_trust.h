// UpstreamTrust: a policy engine's check of its upstream's signed answers (issue 32),
// the service-side twin of the agent's answer_trust.
//
// With trusted keys (upstream.cincinnati.public_keys), a graph or forwarded answer from
// the upstream is taken only with a Cincinnati-Signature by one of them over its exact
// bytes and the query it answers (the whole graph: channel and arch empty), unexpired.
// An unsigned answer is refused when signatures are required
// (upstream.cincinnati.require_signature), or once this upstream has sent a signed one
// (trust on first use, for the process's life: a signing upstream that stops signing is a
// substituted one). For the shared graph (fetched in turn) an older generation than the
// newest taken is refused too; forwarded answers are fetched concurrently, so only their
// signature and expiry are checked.
//
// A refused answer is a failed fetch (failed_upstream_fetch naming the check): the
// policy engine keeps serving its last good graph, whose own signatures expire in turn.
// A taken answer's generation and freshness are the signed ones, never more than the
// unsigned headers say: a path that rewrites Cincinnati-Graph-Fresh cannot make an old
// graph look fresh beyond the moment its source signed it.
// Counts every check in `results` by result: accepted, unsigned (taken) or the reason.
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/answer_signature.h"
#include "http_server/metrics.h"

namespace cincinnati::server {

class UpstreamTrust {
 public:
  UpstreamTrust(TrustedKeys keys, bool require, http_server::Family<http_server::Counter>& results);

  struct Verdict {
    bool taken = false;
    bool is_signed = false;
    SignedFacts facts;    // when signed and taken
    std::string refusal;  // when refused: "<Reason>: <what was wrong>"
  };
  // `header`: the Cincinnati-Signature value (nullptr: none); `now` in Unix seconds;
  // `in_turn`: the shared graph's fetch (the generation may not go back).
  Verdict Check(const std::string* header, std::string_view body, const AnswerScope& scope, int64_t now, bool in_turn);

 private:
  const TrustedKeys keys_;
  const bool require_;
  http_server::Family<http_server::Counter>& results_;
  std::atomic<bool> seen_signed_{false};
  std::atomic<uint64_t> newest_{0};
};

}  // namespace cincinnati::server
