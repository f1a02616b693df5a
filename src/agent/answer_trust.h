// AnswerTrust: the agent's check of signed graph answers (the header and what
// a signature binds are in core/answer_signature.h). With trusted keys
// (--upstream.public-keys), every answer of the update service is checked after it
// arrives and before it is read: a signed answer must be signed by a trusted key, over
// these bytes (as received, after content decoding), for the channel and arch the agent
// asked, not expired, and of a graph generation no older than the newest one accepted
// from that upstream. An unsigned answer is refused when signatures are required
// (--upstream.require-signature), and from an upstream whose signed answer the agent
// has taken before (trust on first use: once an upstream signs, a missing signature is
// a stripped one); else it is used as before (logged once each time answers stop being
// signed). A refusal is a RetrievedUpdates failure whose reason is SignatureReason
// (SignatureMissing, SignatureInvalid, ...); what the retriever then shows is in
// update_retriever.h.
//
// Each upstream whose signed answer was taken is kept in the object store (agentstate /
// answer-signatures) with the newest generation taken from it, written durably when an
// answer's lists are taken and before they are shown, so a restart, a kill -9 included,
// still refuses an older answer, and an unsigned one from that upstream. Only an answer
// whose lists were taken raises it. Generations are one service's numbering, so each
// upstream has its own; an upstream never taken from starts unrecorded (at 0, unsigned
// answers used). At most kMaxSigningUpstreams are kept, the one taken from longest ago
// dropped first. A record whose content cannot be read is set aside (logged, and shown
// in /metrics as cincinnati_agent_answer_signature_record_set_aside) and every
// upstream starts unrecorded: a state file that cannot be read is never a reason not to
// start. Deleting the record (the agent stopped) is how an operator forgets an upstream
// that stopped signing on purpose. A write that fails (a full disk) is logged, counted
// in StorageHealth and tried again at the next answer taken.
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
#include <vector>

#include "agent/graph_client_names.h"
#include "agent/object_store.h"
#include "agent/storage_health.h"
#include "core/answer_signature.h"

namespace cincinnati::agent {

// The /metrics label of an unsigned answer used because signatures are not required.
inline constexpr std::string_view kUnsignedAnswer = "unsigned";
// Upstreams whose signing is remembered (an agent is pointed at one or two).
inline constexpr size_t kMaxSigningUpstreams = 64;

// What names an upstream in the record: the URL's scheme and host in lower case, its
// port unless the scheme's default, and its path without a trailing slash; never its
// credentials, query or fragment. So a re-spelled URL of the same service keeps its
// record (and no token in a URL is written to disk).
std::string UpstreamIdentity(std::string_view url);

class AnswerTrust {
 public:
  // `keys`: at least one. `storage` (may be null) hears of every write's outcome.
  AnswerTrust(ObjectStore& store, TrustedKeys keys, bool require, StorageHealth* storage = nullptr);

  // Reads the upstreams recorded by an earlier run. Only a disk error (the record's file
  // cannot be read at all) is returned.
  Status Load();

  struct Outcome {
    std::optional<RetrievalFailure> refusal;  // set: the answer must not be used
    std::optional<SignedFacts> facts;         // a signed answer that was accepted
    std::string upstream;                     // where it came from
  };
  // Checks one answer from `upstream` (recorded as its UpstreamIdentity) to the query
  // `scope`; `header`: its Cincinnati-Signature value (nullptr: none), `now` in Unix seconds;
  // `withheld`: its Cincinnati-Signature-Withheld value (an unsigned answer that would be
  // refused is then refused as SignatureExpired, saying why).
  Outcome Check(const std::string* header, std::string_view body, const AnswerScope& scope, std::string_view upstream, int64_t now,
                const std::string* withheld = nullptr);
  // The answer `outcome` was checked for had its lists taken: a signed one records its
  // upstream and raises its newest generation (written durably first when that changes).
  void Taken(const Outcome& outcome);

  // The newest generation taken from the upstream taken from last (0: none).
  uint64_t newest_generation() const { return newest_.load(); }
  // Answers checked, by result: "accepted", "unsigned", or a refusal's reason.
  std::map<std::string, uint64_t> Counts() const;
  // Load found a record it could not read and set it aside: every upstream's trust and
  // generation started again (the agent's /metrics shows it, for an alert).
  bool record_set_aside() const { return record_set_aside_.load(); }

 private:
  struct Signer {
    std::string upstream;
    uint64_t newest = 0;  // the newest generation taken from it
  };
  const Signer* Find(std::string_view upstream) const;
  RetrievalFailure Refuse(const SignatureCheck& check, const AnswerScope& scope, std::string_view upstream, const Signer* known,
                          int64_t now);
  void Count(std::string_view result);
  void Persist();

  ObjectStore& store_;
  const TrustedKeys keys_;
  const bool require_;
  StorageHealth* storage_;
  std::atomic<uint64_t> newest_{0};
  std::atomic<bool> record_set_aside_{false};
  std::vector<Signer> signers_;  // the upstream taken from last at the back
  bool dirty_ = false;           // signers_ is not what is on disk (a write failed)
  bool unsigned_logged_ = false;
  mutable std::mutex counts_mu_;
  std::map<std::string, uint64_t> counts_;
};

}  // namespace cincinnati::agent
