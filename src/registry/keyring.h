// Keyring: a set of OpenPGP public keys that signed messages are verified against, and
// Signer: a key that makes them (GPGME over GnuPG).
//
// Contract:
// - A Keyring owns a private, temporary GnuPG home holding only its keys (imported once
//   at Open; ASCII-armored or binary, one blob may hold several certificates). The
//   user's own keyring is never read or changed; the home is removed with the object.
// - Verify() accepts only a signed OpenPGP message (compressed, one-pass, literal and
//   signature packets) whose signature is good and made by a key of this keyring, and
//   returns the signed bytes. A signature past its own expiry or by a revoked key is
//   refused; a good signature by a key that has since expired is accepted, as the
//   cluster-version operator's Go verifier does.
// - Thread-safety: Verify() may be called from any number of threads at once (each
//   call has its own GPGME context); Open and destruction are not concurrent with it.
// - Errors: nothing throws; failures are Status values whose message says which check
//   failed (not a signed message, unknown key, bad signature, expired).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace cincinnati::registry {

struct VerifiedMessage {
  std::string payload;      // the signed bytes
  std::string fingerprint;  // of the key that made the signature
};

class Keyring {
 public:
  // `name` only words errors ("keyring redhat"). Each blob is one or more public keys.
  static Result<std::unique_ptr<Keyring>> Open(std::string name, const std::vector<std::string>& key_blobs);
  // Every regular file of `dir` is a key blob.
  static Result<std::unique_ptr<Keyring>> FromDirectory(std::string name, const std::string& dir);
  ~Keyring();
  Keyring(const Keyring&) = delete;
  Keyring& operator=(const Keyring&) = delete;

  Result<VerifiedMessage> Verify(std::string_view signed_message) const;
  const std::string& name() const { return name_; }
  const std::vector<std::string>& fingerprints() const { return fingerprints_; }

 private:
  Keyring(std::string name, std::string home) : name_(std::move(name)), home_(std::move(home)) {}
  std::string name_, home_;
  std::vector<std::string> fingerprints_;
};

// Signs with a secret key of a GnuPG home (`gnupg_home` empty: $GNUPGHOME or ~/.gnupg).
// `key` selects the key (fingerprint, key ID or user ID; empty: GnuPG's default key).
// Keys must not need a passphrase (or the home's agent must already hold it).
Result<std::string> SignMessage(std::string_view payload, const std::string& gnupg_home, const std::string& key);

}  // namespace cincinnati::registry
