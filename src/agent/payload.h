// Release payloads on disk (reference C11): pulling one by digest from its registry
// into the agent's state directory, and reading what it says about itself.
//
// Download: the manifest is fetched by digest and must hash to it; every layer blob must
// hash to its descriptor. Only `manifests/` and `release-manifests/` are unpacked,
// lowest layer first, into a temporary directory that is fsynced and renamed to
// `<root>/<base64url(md5(pullspec))>`. A directory already there is complete (rename is
// atomic) and reused, so a `kill -9` mid-download leaves only a temporary directory,
// which the next download removes.
//
// Layout: `manifests/`, `release-manifests/`, `release-manifests/release-metadata`
// (`kind` cincinnati-metadata-v0, a SemVer `version`) and
// `release-manifests/image-references` (an image.openshift.io/v1 ImageStream named
// after that version). Errors name the file and what is wrong.
//
// Thread-safety: functions share no state; two downloads of one pull spec at once are
// the caller's to avoid.
#pragma once

#include <map>
#include <stop_token>
#include <string>

#include "core/release_metadata.h"
#include "core/status.h"
#include "registry/client.h"

namespace cincinnati::agent {

struct PayloadInfo {
  std::string dir;
  ReleaseMetadata metadata;
  std::map<std::string, std::string> images;  // image-references: tag name -> pull spec
};

std::string PayloadDirectoryName(const std::string& pullspec);

// Pulls `pullspec` (which must pin a digest) with `client` (its repository) into `root`.
// Returns the payload directory.
Result<std::string> DownloadPayload(registry::RegistryClient& client, const std::string& pullspec,
                                    const std::string& root, std::stop_token stop = {});

// Checks the layout and reads release-metadata and image-references.
Result<PayloadInfo> ReadPayload(const std::string& dir);

}  // namespace cincinnati::agent
