// Key files for signed answers (core/answer_signature.h): a service's signing keys and
// an agent's trusted public keys, read with the environment's capped reads.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/answer_signature.h"
#include "core/status.h"

namespace cincinnati::env {

// One Ed25519 private key in PEM.
Result<std::shared_ptr<const SigningKey>> LoadSigningKey(const std::string& path);
// Comma-separated paths (rotation: the new key next to the old one); errors name the file.
Result<std::vector<std::shared_ptr<const SigningKey>>> LoadSigningKeys(const std::string& paths);
// Every regular file of `dir` whose name ends in .pem, each an Ed25519 public key; at
// most 64. Anything else in the directory is ignored; a .pem that is not a key is an
// error (a key meant to be trusted would silently not be).
Result<TrustedKeys> LoadTrustedKeys(const std::string& dir);

}  // namespace cincinnati::env
