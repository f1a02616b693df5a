// InstalledRelease: the release an agent starts from on an empty state directory:
// a release image in a registry (--release-image, read like the graph builder reads
// releases) or a release document on disk (--release-document, the
// cincinnati-metadata-v0 JSON with a "payload" pull spec, for a registry-less demo).
// Its version, URL and channels come from the release's own metadata. Never throws;
// errors name the image or the file.
#pragma once

#include <string>

#include "agent/graph_client_names.h"
#include "core/status.h"

namespace cincinnati::agent {

struct InstalledReleaseSource {
  std::string release_image;     // pull spec
  std::string release_document;  // path
  std::string registry_username, registry_password, registry_ca_dir;
};

Result<Release> ReadInstalledRelease(const InstalledReleaseSource& source);

}  // namespace cincinnati::agent
