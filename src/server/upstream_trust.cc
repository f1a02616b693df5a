#include "server/upstream_trust.h"

#include <fmt/format.h>

namespace cincinnati::server {

UpstreamTrust::UpstreamTrust(TrustedKeys keys, bool require, http_server::Family<http_server::Counter>& results)
    : keys_(std::move(keys)), require_(require), results_(results) {
  // Every result from the start, so that a first refusal is an increase, not a new series.
  results_.With({"accepted"});
  results_.With({"unsigned"});
  for (SignatureVerdict v : {SignatureVerdict::kMissing, SignatureVerdict::kMalformed, SignatureVerdict::kUnknownKey,
                             SignatureVerdict::kInvalid, SignatureVerdict::kExpired, SignatureVerdict::kRolledBack}) {
    results_.With({std::string(SignatureReason(v))});
  }
}

UpstreamTrust::Verdict UpstreamTrust::Check(const std::string* header, std::string_view body, const AnswerScope& scope, int64_t now,
                                            bool in_turn) {
  Verdict verdict;
  if (header == nullptr) {
    if (!require_ && !seen_signed_.load()) {
      results_.With({"unsigned"}).Increment();
      verdict.taken = true;
      return verdict;
    }
    results_.With({std::string(SignatureReason(SignatureVerdict::kMissing))}).Increment();
    verdict.refusal = fmt::format("{}: the answer is unsigned, and {}", SignatureReason(SignatureVerdict::kMissing),
                                  require_ ? "upstream.cincinnati.require_signature is set"
                                           : "this upstream signed its answers before (restart the policy engine if it "
                                             "stopped signing on purpose)");
    return verdict;
  }
  const SignatureCheck check = CheckAnswerSignature(header, body, scope, keys_, now, in_turn ? newest_.load() : 0);
  if (check.verdict != SignatureVerdict::kAccepted) {
    results_.With({std::string(SignatureReason(check.verdict))}).Increment();
    verdict.refusal = fmt::format("{}: {}", SignatureReason(check.verdict), check.message);
    return verdict;
  }
  results_.With({"accepted"}).Increment();
  seen_signed_ = true;
  if (in_turn) {
    uint64_t newest = newest_.load();
    while (check.facts.generation > newest && !newest_.compare_exchange_weak(newest, check.facts.generation)) {
    }
  }
  verdict.taken = verdict.is_signed = true;
  verdict.facts = check.facts;
  return verdict;
}

}  // namespace cincinnati::server
