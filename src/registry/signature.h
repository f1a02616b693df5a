// Signature verification of image digests ("atomic container signature", the
// simple-signing format OpenShift uses), with GPGME.
//
// A signature is an OpenPGP signed message (binary or armored) whose payload is JSON:
// {"critical": {"image": {"docker-manifest-digest": "sha256:..."}, "type": ..., ...}}.
// It verifies when the OpenPGP signature is good, made by one of the public keys in a
// directory (every regular file is imported, ASCII-armored or binary), and the payload
// names exactly the expected digest. Keys live in a private, temporary GnuPG home, so
// the user's keyring is never read or changed.
#pragma once

#include <string>

#include "core/status.h"

namespace cincinnati::registry {

// Returns the signed payload when valid; the error says which check failed.
Result<std::string> VerifyImageSignature(const std::string& signature, const std::string& public_keys_dir,
                                         const std::string& expected_digest);

// Where signature `index` (1-based) of `digest` lives under a signature store:
// "<base>/sha256=<hex>/signature-<index>" (the mirror.openshift.com layout).
std::string SignatureLocation(const std::string& base, const std::string& digest, int index);

}  // namespace cincinnati::registry
