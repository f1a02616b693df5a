// Where a repository lives, parsed as the reference's registry scrape does: the string
// "<registry>/<repository>" is read as a URL. Without a scheme it is a secure (https)
// registry; "https://" is secure; "http://" is a plain-HTTP registry. Payload pull
// specs never carry the scheme ("localhost:5000/ns/repo@sha256:..."): the reference
// keeps "http://" there, which no container tool can pull. Any other scheme is an error.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace cincinnati::registry {

struct RepositoryLocation {
  std::string base_url;    // "https://quay.io" or "http://127.0.0.1:5000"
  std::string host_port;   // as in payloads, never with a scheme: "quay.io:8080", "localhost:5000"
  std::string repository;  // "openshift-release-dev/ocp-release"
  bool insecure = false;

  // "<host_port>/<repository>": the prefix of payload pull specs.
  std::string PullSpecPrefix() const { return host_port + "/" + repository; }
};

Result<RepositoryLocation> ParseRepositoryLocation(std::string_view registry, std::string_view repository);

// "[scheme://]host[:port]/repo/path[:tag][@sha256:...]".
struct ImageReference {
  RepositoryLocation location;
  std::string tag;     // may be empty
  std::string digest;  // may be empty
  // The tag, else the digest: what the manifest endpoint takes.
  const std::string& reference() const { return digest.empty() ? tag : digest; }
};

Result<ImageReference> ParseImageReference(std::string_view text);

}  // namespace cincinnati::registry
