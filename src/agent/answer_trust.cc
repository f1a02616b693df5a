#include "agent/answer_trust.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace cincinnati::agent {
namespace {

constexpr char kKind[] = "agentstate";
constexpr char kName[] = "answer-signatures";

// Content errors (not JSON, over the limit) are set aside; the disk's own stop the agent.
bool ContentError(const Status& s) {
  return s.code() == Status::Code::kInvalidArgument || s.code() == Status::Code::kTooLarge;
}

Result<uint64_t> GenerationOf(const JsonValue& record) {
  const JsonValue* generation = record.Find("newestGeneration");
  const std::optional<int64_t> n = generation ? generation->integer() : std::nullopt;
  if (!n || *n < 0) return Status::InvalidArgument("newestGeneration is not a non-negative integer");
  return static_cast<uint64_t>(*n);
}

}  // namespace

AnswerTrust::AnswerTrust(ObjectStore& store, TrustedKeys keys, bool require, StorageHealth* storage)
    : store_(store), keys_(std::move(keys)), require_(require), storage_(storage) {}

Status AnswerTrust::Load() {
  auto stored = store_.Get(kKind, kName);
  Status why = stored.status();
  if (stored.ok()) {
    if (!*stored) return Status::OK();  // no signed answer taken yet
    auto generation = GenerationOf(**stored);
    if (generation.ok()) {
      newest_ = persisted_ = *generation;
      if (const JsonValue* upstream = (*stored)->Find("upstream")) upstream_ = upstream->text();
      return Status::OK();
    }
    why = generation.status();
  }
  if (!ContentError(why)) return why.WithContext("the newest answer generation accepted");
  CINCINNATI_ASSIGN_OR_RETURN(std::string aside, store_.SetAside(kKind, kName));
  spdlog::warn("the newest graph generation accepted cannot be read ({}): set aside as {}; any generation is "
               "accepted until the next signed answer",
               why.message(), aside);
  return Status::OK();
}

AnswerTrust::Outcome AnswerTrust::Check(const std::string* header, std::string_view body, const AnswerScope& scope,
                                        std::string_view upstream, int64_t now) {
  const uint64_t newest = upstream == upstream_ ? newest_.load() : 0;  // another service numbers its own graphs
  const SignatureCheck check = CheckAnswerSignature(header, body, scope, keys_, now, newest);
  Outcome out;
  out.upstream = std::string(upstream);
  if (check.verdict == SignatureVerdict::kAccepted) {
    Count("accepted");
    unsigned_logged_ = false;
    out.facts = check.facts;
    spdlog::debug("the update service's answer is {}", check.message);
    return out;
  }
  if (check.verdict == SignatureVerdict::kMissing && !require_) {
    Count(kUnsignedAnswer);
    if (!unsigned_logged_) {
      spdlog::warn("the update service's answer is not signed; it is used, since --upstream.require-signature is off");
      unsigned_logged_ = true;
    }
    return out;
  }
  const std::string_view reason = SignatureReason(check.verdict);
  Count(reason);
  std::string message = check.verdict == SignatureVerdict::kMissing
                            ? "the answer carries no signature, and --upstream.require-signature requires one"
                            : check.message;
  spdlog::warn("the update service's answer for channel {} and arch {} is refused ({}): {}", scope.channel, scope.arch, reason,
               message);
  out.refusal = RetrievalFailure{std::string(reason), std::move(message)};
  return out;
}

void AnswerTrust::Taken(const Outcome& outcome) {
  if (outcome.facts && outcome.upstream != upstream_) {
    upstream_ = outcome.upstream;
    newest_ = outcome.facts->generation;
    Persist();
    return;
  }
  if (!outcome.facts || outcome.facts->generation <= newest_.load()) {
    if (newest_.load() > persisted_) Persist();  // a write that failed before
    return;
  }
  newest_ = outcome.facts->generation;
  Persist();
}

void AnswerTrust::Persist() {
  const uint64_t generation = newest_.load();
  const JsonValue record = JsonValue::Object(
      {{"newestGeneration", JsonValue::Integer(static_cast<int64_t>(generation))}, {"upstream", JsonValue::String(upstream_)}});
  const Status s = store_.Put(kKind, kName, record);
  if (storage_) storage_->Record(StorageArea::kState, s);
  if (!s.ok()) {
    spdlog::error("cannot save the newest graph generation accepted ({}): {}; tried again at the next answer", generation,
                  s.message());
    return;
  }
  persisted_ = generation;
}

std::map<std::string, uint64_t> AnswerTrust::Counts() const {
  std::lock_guard lock(counts_mu_);
  return counts_;
}

void AnswerTrust::Count(std::string_view result) {
  std::lock_guard lock(counts_mu_);
  ++counts_[std::string(result)];
}

}  // namespace cincinnati::agent
