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

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace cincinnati::registry {

// The signed payload of an "atomic container signature":
// {"critical": {"type": "atomic container signature",
//               "image": {"docker-manifest-digest": "<digest>"},
//               "identity": {"docker-reference": "<reference>"}},
//  "optional": {"creator": "<text>", "timestamp": <int64>}}
struct AtomicSignature {
  std::string digest;
  std::string reference;
  std::string creator;
  std::optional<int64_t> timestamp;
};

// Decodes strictly, as the cluster-version operator does: a member this layout does not
// name (anywhere, `optional` included) is an error, `type` must be exactly "atomic
// container signature" and `docker-reference` must not be empty. The error names the
// member ("critical.identity.docker-reference: ...").
Result<AtomicSignature> ParseAtomicSignature(std::string_view json);

// The payload for `signature` (creator and timestamp written when set), one line.
std::string WriteAtomicSignature(const AtomicSignature& signature);

// Returns the signed payload when valid; the error says which check failed.
Result<std::string> VerifyImageSignature(const std::string& signature, const std::string& public_keys_dir,
                                         const std::string& expected_digest);

// Where signature `index` (1-based) of `digest` lives under a signature store:
// "<base>/sha256=<hex>/signature-<index>" (the mirror.openshift.com layout).
std::string SignatureLocation(const std::string& base, const std::string& digest, int index);

}  // namespace cincinnati::registry
