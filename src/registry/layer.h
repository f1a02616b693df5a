// Image layers as gzip-compressed tar archives (libarchive).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace cincinnati::registry {

struct LayerEntry {
  std::string path;  // "release-manifests/release-metadata"
  std::string content;
  bool directory = false;  // a directory entry (content unused): keeps an empty directory
};

// A deterministic .tar.gz (mode 0644 files, 0755 directories, mtime 0, owner 0) of the
// entries; directories that hold files need no entry of their own. Also returns the digest of the uncompressed tar (the image config's diff_id).
struct Layer {
  std::string gzip;
  std::string diff_id;
};
Result<Layer> MakeLayer(const std::vector<LayerEntry>& entries);

// The content of the regular file at `path` (compared component-wise, so "./a/b" is
// "a/b"), nullopt if the layer has none. An error when the layer is not a gzip tar.
Result<std::optional<std::string>> ReadFileFromLayer(const std::string& gzip_tar, const std::string& path);

// Unpacks the regular files and directories of a layer under `dest` (over what lower
// layers left), keeping only entries for which keep(path, is_directory) is true; a
// directory kept is created even when empty. Whiteouts are applied: ".wh.<name>"
// deletes <name>; opaque whiteouts (".wh..wh..opq") are ignored, as upstream. Paths
// that would leave `dest` (absolute, "..") are refused.
Status ExtractLayer(const std::string& gzip_tar, const std::string& dest,
                    const std::function<bool(const std::string& path, bool directory)>& keep);

// Every regular file under `dir` as entries relative to it, in path order. With
// `with_directories`, every directory under `dir` too (as directory entries).
Result<std::vector<LayerEntry>> DirectoryEntries(const std::string& dir, bool with_directories = false);

}  // namespace cincinnati::registry
