#include "core/answer_signature.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <charconv>

#include <fmt/format.h>

#include "core/base64.h"
#include "core/sha256.h"
#include "core/strings.h"

namespace cincinnati {
namespace {

constexpr size_t kMaxPem = 64 * 1024;

EVP_PKEY* Pkey(void* p) { return static_cast<EVP_PKEY*>(p); }

// The key id of an Ed25519 key: SHA-256 of its raw public bytes, 16 hex digits.
Result<std::string> KeyId(EVP_PKEY* pkey) {
  unsigned char raw[32];
  size_t len = sizeof raw;
  if (EVP_PKEY_get_raw_public_key(pkey, raw, &len) != 1 || len != sizeof raw) {
    return Status::InvalidArgument("not an Ed25519 key");
  }
  return Sha256Hex(std::string_view(reinterpret_cast<const char*>(raw), len)).substr(0, 16);
}

Result<EVP_PKEY*> ReadPem(std::string_view pem, bool is_private) {
  if (pem.size() > kMaxPem) return Status::InvalidArgument("a key file over 64 KiB");
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return Status::Internal("out of memory");
  EVP_PKEY* pkey = is_private ? PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr) : PEM_read_bio_PUBKEY(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (pkey == nullptr) {
    return Status::InvalidArgument(is_private ? "not a PEM private key (openssl genpkey -algorithm ed25519)"
                                              : "not a PEM public key (openssl pkey -pubout)");
  }
  if (EVP_PKEY_id(pkey) != EVP_PKEY_ED25519) {
    EVP_PKEY_free(pkey);
    return Status::InvalidArgument("not an Ed25519 key");
  }
  return pkey;
}

bool ParseNumber(std::string_view text, int64_t& out) {
  if (text.empty() || text.size() > 19) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && out >= 0;
}

struct ParsedHeader {
  SignedFacts facts;
  std::vector<std::pair<std::string, std::string>> sigs;  // key id, 64 signature bytes
};

Result<ParsedHeader> ParseHeader(std::string_view header) {
  if (header.size() > kMaxSignatureHeader) return Status::InvalidArgument("a signature header over 4 KiB");
  ParsedHeader out;
  bool version = false, generation = false, signed_at = false, expires = false;
  for (std::string_view item : Split(header, ';')) {
    item = TrimWhitespace(item);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) return Status::InvalidArgument(fmt::format("'{}' is not name=value", Abbreviate(item, 40)));
    const std::string_view name = item.substr(0, eq), value = item.substr(eq + 1);
    int64_t number = 0;
    if (name == "v") {
      if (value != "1") return Status::InvalidArgument(fmt::format("signature version '{}' (this client reads 1)", Abbreviate(value, 20)));
      version = true;
    } else if (name == "generation" || name == "signed" || name == "expires") {
      if (!ParseNumber(value, number)) return Status::InvalidArgument(fmt::format("{} '{}' is not a number", name, Abbreviate(value, 24)));
      if (name == "generation") out.facts.generation = static_cast<uint64_t>(number), generation = true;
      if (name == "signed") out.facts.signed_at = number, signed_at = true;
      if (name == "expires") out.facts.expires = number, expires = true;
    } else if (name == "scope") {
      if (value != "cluster") return Status::InvalidArgument(fmt::format("scope '{}' (this client reads cluster)", Abbreviate(value, 20)));
      out.facts.per_cluster = true;
    } else if (name == "sig") {
      const size_t colon = value.find(':');
      if (colon != 16 || out.sigs.size() >= kMaxSignatures) return Status::InvalidArgument("a sig that is not KEYID:BASE64");
      auto bytes = Base64Decode(value.substr(colon + 1));
      if (!bytes.ok() || bytes->size() != 64) return Status::InvalidArgument("a sig that is not 64 bytes of base64");
      out.sigs.emplace_back(std::string(value.substr(0, colon)), std::move(bytes).value());
    }  // other names: later versions' additions, ignored
  }
  if (!version || !generation || !signed_at || !expires || out.sigs.empty()) {
    return Status::InvalidArgument("v, generation, signed, expires and a sig are all needed");
  }
  return out;
}

}  // namespace

std::string SignatureStatement(const SignedFacts& facts, const AnswerScope& scope, std::string_view body_sha256_hex) {
  return fmt::format(
      "cincinnati-signed-answer-v1\ngeneration: {}\nsigned: {}\nexpires: {}\nchannel: {}\narch: {}\nversion: {}\nid: {}\nsha256: {}\n",
      facts.generation, facts.signed_at, facts.expires, scope.channel, scope.arch, scope.version,
      facts.per_cluster ? scope.id : std::string_view(), body_sha256_hex);
}

SigningKey::~SigningKey() { EVP_PKEY_free(Pkey(pkey_)); }

Result<std::shared_ptr<const SigningKey>> SigningKey::FromPem(std::string_view pem) {
  CINCINNATI_ASSIGN_OR_RETURN(EVP_PKEY * pkey, ReadPem(pem, true));
  std::shared_ptr<SigningKey> key(new SigningKey());
  key->pkey_ = pkey;
  CINCINNATI_ASSIGN_OR_RETURN(key->id_, KeyId(pkey));
  return std::shared_ptr<const SigningKey>(std::move(key));
}

Result<std::string> SigningKey::Sign(std::string_view message) const {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  if (ctx == nullptr) return Status::Internal("out of memory");
  std::string signature(64, '\0');
  size_t len = signature.size();
  const bool ok = EVP_DigestSignInit(ctx, nullptr, nullptr, nullptr, Pkey(pkey_)) == 1 &&
                  EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(signature.data()), &len,
                                 reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1;
  EVP_MD_CTX_free(ctx);
  if (!ok || len != 64) return Status::Internal("Ed25519 signing failed");
  return signature;
}

std::string SigningKey::PublicPem() const {
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio == nullptr) return "";
  std::string out;
  if (PEM_write_bio_PUBKEY(bio, Pkey(pkey_)) == 1) {
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio, &data);
    if (n > 0) out.assign(data, static_cast<size_t>(n));
  }
  BIO_free(bio);
  return out;
}

PublicKey::~PublicKey() { EVP_PKEY_free(Pkey(pkey_)); }

Result<std::shared_ptr<const PublicKey>> PublicKey::FromPem(std::string_view pem) {
  CINCINNATI_ASSIGN_OR_RETURN(EVP_PKEY * pkey, ReadPem(pem, false));
  std::shared_ptr<PublicKey> key(new PublicKey());
  key->pkey_ = pkey;
  CINCINNATI_ASSIGN_OR_RETURN(key->id_, KeyId(pkey));
  return std::shared_ptr<const PublicKey>(std::move(key));
}

bool PublicKey::Verify(std::string_view message, std::string_view signature) const {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  if (ctx == nullptr) return false;
  const bool ok = EVP_DigestVerifyInit(ctx, nullptr, nullptr, nullptr, Pkey(pkey_)) == 1 &&
                  EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                                   reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1;
  EVP_MD_CTX_free(ctx);
  return ok;
}

const PublicKey* TrustedKeys::Find(std::string_view id) const {
  auto it = keys_.find(id);
  return it == keys_.end() ? nullptr : it->second.get();
}

Result<std::string> SignAnswer(const std::vector<std::shared_ptr<const SigningKey>>& keys, const SignedFacts& facts,
                               const AnswerScope& scope, std::string_view body) {
  if (keys.empty() || keys.size() > kMaxSignatures) return Status::InvalidArgument("between 1 and 8 signing keys");
  const std::string statement = SignatureStatement(facts, scope, Sha256Hex(body));
  std::string header = fmt::format("v=1; generation={}; signed={}; expires={}{}", facts.generation, facts.signed_at, facts.expires,
                                   facts.per_cluster ? "; scope=cluster" : "");
  for (const auto& key : keys) {
    CINCINNATI_ASSIGN_OR_RETURN(std::string signature, key->Sign(statement));
    header += fmt::format("; sig={}:{}", key->id(), Base64Encode(signature));
  }
  return header;
}

std::string_view SignatureReason(SignatureVerdict verdict) {
  switch (verdict) {
    case SignatureVerdict::kAccepted: return "SignatureAccepted";
    case SignatureVerdict::kMissing: return "SignatureMissing";
    case SignatureVerdict::kMalformed: return "SignatureMalformed";
    case SignatureVerdict::kUnknownKey: return "SignatureUnknownKey";
    case SignatureVerdict::kInvalid: return "SignatureInvalid";
    case SignatureVerdict::kExpired: return "SignatureExpired";
    case SignatureVerdict::kRolledBack: return "SignatureRolledBack";
  }
  return "SignatureInvalid";
}

std::string WithheldMessage(std::string_view withheld) {
  return fmt::format("the update service withheld its signature ({}): its graph's source has not vouched for the graph "
                     "within the signatures' validity, so the answer is not vouched fresh (a service cut off from its source)",
                     Abbreviate(withheld, 80));
}

namespace {

// Whether one of the header's signatures by a trusted key signs `statement`; if none
// does, `check` says why (an untrusted signer, or a signature that does not match).
bool VerifySignatures(const ParsedHeader& parsed, const std::string& statement, const AnswerScope& scope,
                      const TrustedKeys& keys, SignatureCheck& check) {
  bool trusted = false;
  for (const auto& [id, signature] : parsed.sigs) {
    const PublicKey* key = keys.Find(id);
    if (key == nullptr) continue;
    trusted = true;
    if (key->Verify(statement, signature)) {
      check.key_id = id;
      check.verdict = SignatureVerdict::kAccepted;
      return true;
    }
  }
  std::string ids;
  for (const auto& sig : parsed.sigs) ids += (ids.empty() ? "" : ", ") + sig.first;
  check.verdict = trusted ? SignatureVerdict::kInvalid : SignatureVerdict::kUnknownKey;
  check.message = trusted ? fmt::format("the signature by {} does not match this answer to channel {}, arch {}, version {}{}", ids,
                                        scope.channel, scope.arch, scope.version, parsed.facts.per_cluster ? " and this cluster" : "")
                          : fmt::format("signed by {}, none of them a trusted key", ids);
  return false;
}

// Whether a verified answer is fresh: not expired, not signed in the future, its
// generation neither far ahead of this clock nor behind the newest seen; if not, `check`
// says why.
bool CheckFreshness(const SignedFacts& facts, int64_t now, uint64_t newest_generation, int64_t skew,
                    SignatureCheck& check) {
  if (now >= facts.expires) {
    check.verdict = SignatureVerdict::kExpired;
    check.message = fmt::format("the answer's signature expired at {} ({} s ago): a stale or replayed answer, or a service cut off "
                                "from its source (or this cluster's clock is ahead)",
                                facts.expires, now - facts.expires);
    return false;
  }
  if (facts.signed_at > now + skew) {
    check.verdict = SignatureVerdict::kExpired;
    check.message = fmt::format("the answer was signed at {}, {} s in the future", facts.signed_at, facts.signed_at - now);
    return false;
  }
  // Generations are a clock in milliseconds (signing/graph_generation.h). One ahead of
  // this clock by more than the lead comes from a clock that is wrong (the service's
  // ahead, or this one behind) or a forged number, and taken it would make every later
  // answer look rolled back: refused.
  if (now > 0 && facts.generation / 1000 > static_cast<uint64_t>(now) + kMaxGenerationLead) {
    check.verdict = SignatureVerdict::kInvalid;
    check.message = fmt::format(
        "the answer's graph generation {} is {} s ahead of this clock ({} ms), more than the {} s allowed: the update "
        "service's clock is ahead, this cluster's is behind, or the number is forged",
        facts.generation, facts.generation / 1000 - static_cast<uint64_t>(now), static_cast<uint64_t>(now) * 1000,
        kMaxGenerationLead);
    return false;
  }
  if (facts.generation < newest_generation) {
    check.verdict = SignatureVerdict::kRolledBack;
    check.message = fmt::format("the answer is of graph generation {}, older than generation {} already seen: a rolled-back answer",
                                facts.generation, newest_generation);
    return false;
  }
  return true;
}

}  // namespace

SignatureCheck CheckAnswerSignature(const std::string* header, std::string_view body, const AnswerScope& scope,
                                    const TrustedKeys& keys, int64_t now, uint64_t newest_generation, int64_t skew) {
  SignatureCheck check;
  if (header == nullptr) {
    check.message = "the answer carries no signature";
    return check;
  }
  auto parsed = ParseHeader(*header);
  if (!parsed.ok()) {
    check.verdict = SignatureVerdict::kMalformed;
    check.message = fmt::format("the answer's signature header: {}", parsed.status().message());
    return check;
  }
  check.facts = parsed->facts;
  check.key_id = parsed->sigs.front().first;
  const std::string statement = SignatureStatement(parsed->facts, scope, Sha256Hex(body));
  if (!VerifySignatures(*parsed, statement, scope, keys, check)) return check;
  if (!CheckFreshness(parsed->facts, now, newest_generation, skew, check)) return check;
  check.message = fmt::format("signed by {}, graph generation {}, valid until {}", check.key_id, parsed->facts.generation,
                              parsed->facts.expires);
  return check;
}

}  // namespace cincinnati
