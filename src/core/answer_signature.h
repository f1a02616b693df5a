// Signed graph answers: what an update service signs so that a cluster can
// tell a real, fresh answer from a stale, replayed or forged one, and how it is checked.
//
// The answer's bytes are not changed: the signature travels in one response header,
//   Cincinnati-Signature: v=1; generation=G; signed=S; expires=E[; scope=cluster]; sig=KEYID:BASE64[; sig=...]
// (clients that know nothing of it, such as the CVO, read the answer as before). Each
// `sig` is an Ed25519 signature by the key KEYID over the statement
//   cincinnati-signed-answer-v1\n generation: G\n signed: S\n expires: E\n
//   channel: C\n arch: A\n version: V\n id: I\n
//   sha256: <hex SHA-256 of the answer's identity-encoded bytes>\n
// so it binds the exact JSON, the query it answers (channel, arch and version as the
// query gave them: an answer for another channel, or a channel-target view for another
// version, cannot be passed off), the graph's generation (a number that only grows, so
// an older answer can be told from a newer one) and a validity period (so a replayed
// answer stops being accepted when it expires: TUF's freeze-attack defence). The
// cluster id I is bound only with `scope=cluster`, for an answer made for that cluster
// alone (a hotfix entitlement); otherwise I is empty: within one query, a phased
// rollout's answer for one cluster could be passed to another (binding every id would
// cost a signature per cluster and poll). Several `sig`s: one per signing key (rotation).
//
// KEYID: the first 16 hex digits of the SHA-256 of the raw 32-byte public key. Keys are
// PEM files (`openssl genpkey -algorithm ed25519`, `openssl pkey -pubout`).
// Parsing is total and capped (a header of at most 4 KiB, at most 8 signatures).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace cincinnati {

inline constexpr char kSignatureHeader[] = "Cincinnati-Signature";
// Sent instead of a signature when one would already have expired (the graph's source
// stopped answering): "expired=E; fresh=F" (Unix seconds). It vouches for nothing; a
// checker that would refuse the unsigned answer says why with it (SignatureExpired).
inline constexpr char kSignatureWithheldHeader[] = "Cincinnati-Signature-Withheld";
inline constexpr size_t kMaxSignatureHeader = 4096;
inline constexpr size_t kMaxSignatures = 8;
// How far (seconds) a signed generation, a clock in milliseconds, may be ahead of the
// checker's clock: as far as a signature's time may be (CheckAnswerSignature's skew).
// Services never number a graph further ahead of their own clock
// (signing/graph_generation.h), so a legitimate generation is within it wherever the
// clocks agree that closely.
inline constexpr uint64_t kMaxGenerationLead = 300;

// What one signature vouches for, besides the bytes.
struct SignedFacts {
  uint64_t generation = 0;
  int64_t signed_at = 0;  // Unix seconds
  int64_t expires = 0;    // Unix seconds
  bool per_cluster = false;  // the cluster id is bound (scope=cluster)
};

// The query an answer answers, as the query gave it.
struct AnswerScope {
  std::string_view channel, arch, version, id;
};

std::string SignatureStatement(const SignedFacts& facts, const AnswerScope& scope, std::string_view body_sha256_hex);

class SigningKey;
class PublicKey;

// An Ed25519 key pair (private) read from a PEM file or text.
class SigningKey {
 public:
  static Result<std::shared_ptr<const SigningKey>> FromPem(std::string_view pem);
  ~SigningKey();
  const std::string& id() const { return id_; }
  // 64 bytes.
  Result<std::string> Sign(std::string_view message) const;
  // The public half, as a PEM "PUBLIC KEY" (for `cincinnati` to print).
  std::string PublicPem() const;

 private:
  SigningKey() = default;
  void* pkey_ = nullptr;  // EVP_PKEY*
  std::string id_;
};

class PublicKey {
 public:
  static Result<std::shared_ptr<const PublicKey>> FromPem(std::string_view pem);
  ~PublicKey();
  const std::string& id() const { return id_; }
  bool Verify(std::string_view message, std::string_view signature) const;

 private:
  PublicKey() = default;
  void* pkey_ = nullptr;  // EVP_PKEY*
  std::string id_;
};

// The trusted public keys, by id (env/key_files.h reads them from a directory).
class TrustedKeys {
 public:
  void Add(std::shared_ptr<const PublicKey> key) { keys_[key->id()] = std::move(key); }
  const PublicKey* Find(std::string_view id) const;
  size_t size() const { return keys_.size(); }

 private:
  std::map<std::string, std::shared_ptr<const PublicKey>, std::less<>> keys_;
};

// The header value for `facts`, signed by each of `keys` over the statement.
Result<std::string> SignAnswer(const std::vector<std::shared_ptr<const SigningKey>>& keys, const SignedFacts& facts,
                               const AnswerScope& scope, std::string_view body);

// Why an answer was refused; the names are the agent's RetrievedUpdates reasons.
enum class SignatureVerdict {
  kAccepted,
  kMissing,       // SignatureMissing: no header (refused only when signatures are required)
  kMalformed,     // SignatureMalformed: a header that does not parse
  kUnknownKey,    // SignatureUnknownKey: no signature by a trusted key
  kInvalid,       // SignatureInvalid: a trusted key's signature does not match these bytes, or vouches
                  // for a generation more than kMaxGenerationLead ahead of the clock
  kExpired,       // SignatureExpired: past its expiry (or signed in the future)
  kRolledBack,    // SignatureRolledBack: an older generation than one already accepted
};
std::string_view SignatureReason(SignatureVerdict verdict);
// The refusal's message for an unsigned answer that carries kSignatureWithheldHeader.
std::string WithheldMessage(std::string_view withheld);

struct SignatureCheck {
  SignatureVerdict verdict = SignatureVerdict::kMissing;
  SignedFacts facts;      // when the header parsed
  std::string key_id;     // the key that verified it (accepted), or the first named
  std::string message;    // for people: what was wrong
};

// Checks `header` (nullptr: absent) for `body` answering `scope` at `now`, with
// `newest_generation` the newest generation accepted so far (0: none). `skew`: how far
// in the future a signature's time may be.
SignatureCheck CheckAnswerSignature(const std::string* header, std::string_view body, const AnswerScope& scope,
                                    const TrustedKeys& keys, int64_t now, uint64_t newest_generation, int64_t skew = 300);

}  // namespace cincinnati
