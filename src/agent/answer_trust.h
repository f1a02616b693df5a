// AnswerTrust: the agent's check of signed graph answers (issue 32; the header and what
// a signature binds are in core/answer_signature.h). With trusted keys
// (--upstream.public-keys), every answer of the update service is checked after it
// arrives and before it is read: a signed answer must be signed by a trusted key, over
// these bytes (as received, after content decoding), for the channel and arch the agent
// asked, not expired, and of a graph generation no older than the newest one accepted.
// An unsigned answer is refused when signatures are required
// (--upstream.require-signature), else used as before (logged once each time answers
// stop being signed). A refusal is a RetrievedUpdates failure whose reason is
// SignatureReason (SignatureMissing, SignatureInvalid, ...): the retriever keeps the
// lists of the last answer it took (update_retriever.h).
//
// The newest generation accepted is kept in the object store (agentstate /
// answer-signatures) with the upstream it came from, written durably when an answer's
// lists are taken and before they are shown, so a restart, a kill -9 included, still
// refuses an older answer. Only an answer whose lists were taken raises it. Generations
// are one service's numbering: when the agent is pointed at another upstream, counting
// starts again there. A record whose content cannot be read is set
// aside (logged) and counting starts again from 0: a state file that cannot be read is
// never a reason not to start. A write that fails (a full disk) is logged, counted in
// StorageHealth and tried again at the next answer taken.
//
// Thread-safety: Load, Check and Taken from one thread (the retrieval loop);
// newest_generation() and Counts() from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "agent/graph_client_names.h"
#include "agent/object_store.h"
#include "agent/storage_health.h"
#include "core/answer_signature.h"

namespace cincinnati::agent {

// The /metrics label of an unsigned answer used because signatures are not required.
inline constexpr std::string_view kUnsignedAnswer = "unsigned";

class AnswerTrust {
 public:
  // `keys`: at least one. `storage` (may be null) hears of every write's outcome.
  AnswerTrust(ObjectStore& store, TrustedKeys keys, bool require, StorageHealth* storage = nullptr);

  // Reads the newest generation accepted by an earlier run. Only a disk error (the
  // record's file cannot be read at all) is returned.
  Status Load();

  struct Outcome {
    std::optional<RetrievalFailure> refusal;  // set: the answer must not be used
    std::optional<SignedFacts> facts;         // a signed answer that was accepted
    std::string upstream;                     // where it came from
  };
  // Checks one answer from `upstream` to the query `scope`; `header`: its
  // Cincinnati-Signature value (nullptr: none), `now` in Unix seconds.
  Outcome Check(const std::string* header, std::string_view body, const AnswerScope& scope, std::string_view upstream, int64_t now);
  // The answer `outcome` was checked for had its lists taken: its generation becomes the
  // newest accepted (written durably first when it is newer than the one on disk).
  void Taken(const Outcome& outcome);

  uint64_t newest_generation() const { return newest_.load(); }
  // Answers checked, by result: "accepted", "unsigned", or a refusal's reason.
  std::map<std::string, uint64_t> Counts() const;

 private:
  void Count(std::string_view result);
  void Persist();

  ObjectStore& store_;
  const TrustedKeys keys_;
  const bool require_;
  StorageHealth* storage_;
  std::atomic<uint64_t> newest_{0};
  uint64_t persisted_ = 0;  // the newest generation on disk
  std::string upstream_;    // the upstream `newest_` is of
  bool unsigned_logged_ = false;
  mutable std::mutex counts_mu_;
  std::map<std::string, uint64_t> counts_;
};

}  // namespace cincinnati::agent
