// Image layers as gzip-compressed tar archives (libarchive).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "env/file_system.h"

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

// How ExtractLayer writes, and what it tells its caller.
struct ExtractOptions {
  env::FileSystem* fs = nullptr;  // nullptr: env::DefaultFileSystem()
  // Called after each regular file is written (its normalized path under `dest`, and the
  // bytes written), and for each path a whiteout removed.
  std::function<void(const std::string& path, std::string_view content)> on_file;
  std::function<void(const std::string& path)> on_remove;
  // A layer is untrusted: an entry claiming more, or a layer unpacking to more in all,
  // is refused before it is read.
  uint64_t max_file_bytes = uint64_t{256} << 20;
  uint64_t max_total_bytes = uint64_t{4} << 30;
};

// Unpacks the regular files and directories of a layer under `dest` (over what lower
// layers left), keeping only entries for which keep(path, is_directory) is true; a
// directory kept is created even when empty. Whiteouts are applied: ".wh.<name>"
// deletes <name>; opaque whiteouts (".wh..wh..opq") are ignored, as upstream. Paths
// that would leave `dest` (absolute, "..") are refused. Every write is checked to the
// end (a full disk is NoSpace); files are not fsynced here (the caller syncs the tree).
Status ExtractLayer(const std::string& gzip_tar, const std::string& dest,
                    const std::function<bool(const std::string& path, bool directory)>& keep,
                    const ExtractOptions& options = {});

// Every regular file under `dir` as entries relative to it, in path order. With
// `with_directories`, every directory under `dir` too (as directory entries).
Result<std::vector<LayerEntry>> DirectoryEntries(const std::string& dir, bool with_directories = false);

}  // namespace cincinnati::registry
