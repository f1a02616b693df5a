// UpstreamTrust: a policy engine's check of its upstream's signed answers,
// the service-side twin of the agent's answer_trust.
//
// With trusted keys (upstream.cincinnati.public_keys), a graph or forwarded answer from
// the upstream is taken only with a Cincinnati-Signature by one of them over its exact
// bytes and the query it answers (the whole graph: channel and arch empty), unexpired.
// An unsigned answer is refused when signatures are required
// (upstream.cincinnati.require_signature, the default with keys), or once this upstream
// has sent a signed one (trust on first use, for the process's life: a signing upstream
// that stops signing is a substituted one).
//
// Rollback, for the shared graph (fetched in turn; forwarded answers are fetched
// concurrently, so only their signature and expiry are checked): a new graph of an
// older generation than the newest taken is refused unless it was signed later than
// that one was. A replayed answer was signed before; a graph builder that honestly
// numbers lower (several behind one address, or one that lost its state) signs now. The
// same bytes again are never a rollback.
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
#include <mutex>
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
    SignedFacts facts = {};    // when signed and taken
    std::string refusal = {};  // when refused: "<Reason>: <what was wrong>"
  };
  // `header`: the Cincinnati-Signature value (nullptr: none); `now` in Unix seconds;
  // `rollback`: the shared graph's fetch of bytes other than the last (its generation may
  // not go back).
  // `withheld`: the Cincinnati-Signature-Withheld value of an unsigned answer (it is then
  // refused as SignatureExpired, saying why, where it would be refused as missing).
  Verdict Check(const std::string* header, std::string_view body, const AnswerScope& scope, int64_t now, bool rollback,
                const std::string* withheld = nullptr);

 private:
  Verdict Refuse(SignatureVerdict why, std::string message);

  const TrustedKeys keys_;
  const bool require_;
  http_server::Family<http_server::Counter>& results_;
  std::atomic<bool> seen_signed_{false};
  std::mutex mu_;
  uint64_t newest_generation_ = 0;  // under mu_: the highest generation of a shared graph taken,
  int64_t newest_signed_at_ = 0;    // and when it was last signed
};

}  // namespace cincinnati::server
