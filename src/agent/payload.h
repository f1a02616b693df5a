// Release payloads on disk: pulling one by digest from its registry
// into the agent's state directory, and reading what it says about itself.
//
// Download: the manifest is fetched by digest and must hash to it; every layer blob must
// hash to its descriptor. Only `manifests/` and `release-manifests/` are unpacked,
// lowest layer first, into a temporary directory, with every write checked to the end
// (a full disk is NoSpace, never a payload problem). A record of what was written
// (`.payload-index.json`: each file's size and SHA-256) goes beside the files; the tree
// is fsynced, read back and checked against the record, and only then renamed to
// `<root>/<base64url(md5(pullspec))>`. So a `kill -9` or a failed write mid-download
// leaves only a temporary directory, which the next download removes, and a directory
// under its final name is whole when it was renamed.
//
// Before a payload directory is used (reused by a download, or loaded to be applied),
// VerifyPayloadOnDisk checks it against its record again: a file truncated, changed,
// missing or added since (a disk that lost writes, an older agent's download that kept
// a cut file, a person's edit) makes it an error, and the download fetches it again,
// replacing the old directory only once the new one is whole (a download that fails
// leaves it as it was).
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
#include "env/file_system.h"
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
                                    const std::string& root, std::stop_token stop = {},
                                    env::FileSystem& fs = env::DefaultFileSystem());

// Whether the payload at `dir` is what its download wrote (sizes and SHA-256 of every
// file, no file missing or added): InvalidArgument naming the first difference,
// NotFound for a payload without a record (pulled by an older agent).
Status VerifyPayloadOnDisk(const std::string& dir);
inline constexpr char kPayloadIndexFile[] = ".payload-index.json";

// Checks the layout and reads release-metadata and image-references.
Result<PayloadInfo> ReadPayload(const std::string& dir);

}  // namespace cincinnati::agent
