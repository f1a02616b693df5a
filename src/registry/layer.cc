#include "registry/layer.h"

#include <archive.h>
#include <archive_entry.h>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <iterator>

#include "core/sha256.h"
#include "core/strings.h"
#include "env/file_system.h"

namespace cincinnati::registry {
namespace {

std::string NormalizePath(std::string_view path) {
  std::string out;
  for (std::string_view part : Split(path, '/')) {
    if (part.empty() || part == ".") continue;
    if (!out.empty()) out += '/';
    out += part;
  }
  return out;
}

Result<std::string> WriteArchive(const std::vector<LayerEntry>& entries, bool gzip) {
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  if (gzip) {
    archive_write_add_filter_gzip(a);
    archive_write_set_filter_option(a, "gzip", "timestamp", nullptr);  // no mtime in the gzip header
  }
  std::string out;
  out.resize(64 * 1024 + entries.size() * 1024);
  for (const auto& e : entries) out.resize(out.size() + e.content.size() * 2);
  size_t used = 0;
  archive_write_set_bytes_in_last_block(a, 1);
  if (archive_write_open_memory(a, out.data(), out.size(), &used) != ARCHIVE_OK) {
    std::string err = archive_error_string(a) ? archive_error_string(a) : "archive_write_open_memory";
    archive_write_free(a);
    return Status::Internal(err);
  }
  for (const LayerEntry& e : entries) {
    archive_entry* entry = archive_entry_new();
    archive_entry_set_pathname(entry, e.path.c_str());
    archive_entry_set_size(entry, e.directory ? 0 : static_cast<la_int64_t>(e.content.size()));
    archive_entry_set_filetype(entry, e.directory ? AE_IFDIR : AE_IFREG);
    archive_entry_set_perm(entry, e.directory ? 0755 : 0644);
    archive_entry_set_mtime(entry, 0, 0);
    archive_write_header(a, entry);
    if (!e.directory) archive_write_data(a, e.content.data(), e.content.size());
    archive_entry_free(entry);
  }
  int rc = archive_write_close(a);
  std::string err = rc != ARCHIVE_OK && archive_error_string(a) ? archive_error_string(a) : "";
  archive_write_free(a);
  if (rc != ARCHIVE_OK) return Status::Internal("writing layer: " + err);
  out.resize(used);
  return out;
}

// A reader over a gzip tar held in memory; nullptr (and `error`) when it is not one.
archive* OpenGzipTar(const std::string& gzip_tar, std::string* error) {
  archive* a = archive_read_new();
  archive_read_support_filter_gzip(a);
  archive_read_support_format_tar(a);
  if (archive_read_open_memory(a, gzip_tar.data(), gzip_tar.size()) != ARCHIVE_OK) {
    *error = archive_error_string(a) ? archive_error_string(a) : "unreadable";
    archive_read_free(a);
    return nullptr;
  }
  return a;
}

}  // namespace

Result<Layer> MakeLayer(const std::vector<LayerEntry>& entries) {
  CINCINNATI_ASSIGN_OR_RETURN(std::string tar, WriteArchive(entries, false));
  CINCINNATI_ASSIGN_OR_RETURN(std::string gzip, WriteArchive(entries, true));
  return Layer{std::move(gzip), "sha256:" + Sha256Hex(tar)};
}

namespace {

enum class EntryType { kRegular, kDirectory, kOther };

// Calls visit(raw path, entry type, read the content) for each entry until it returns
// false. Archive errors and visit's errors end the walk.
using Visitor = std::function<Result<bool>(const std::string& path, EntryType type,
                                           const std::function<Result<std::string>()>& read)>;

// Entries larger than `max_entry_bytes` are refused before they are read (their size
// comes from the untrusted header).
Status WalkLayer(const std::string& gzip_tar, const Visitor& visit, uint64_t max_entry_bytes = uint64_t{256} << 20) {
  std::string error;
  archive* a = OpenGzipTar(gzip_tar, &error);
  if (!a) return Status::InvalidArgument("layer is not a gzip tar: " + error);
  Status status;
  archive_entry* entry = nullptr;
  while (status.ok()) {
    int rc = archive_read_next_header(a, &entry);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
      status = Status::InvalidArgument(fmt::format("layer is not a valid gzip tar: {}",
                                                   archive_error_string(a) ? archive_error_string(a) : "read error"));
      break;
    }
    std::string path = archive_entry_pathname(entry);
    auto read = [&]() -> Result<std::string> {
      const la_int64_t size = archive_entry_size(entry);
      if (size < 0 || static_cast<uint64_t>(size) > max_entry_bytes) {
        return Status::TooLarge(fmt::format("layer entry {} claims {} bytes, over the limit of {}", path, size, max_entry_bytes));
      }
      std::string content(static_cast<size_t>(size), '\0');
      la_ssize_t n = archive_read_data(a, content.data(), content.size());
      if (n < 0 || static_cast<size_t>(n) != content.size()) {
        return Status::InvalidArgument(fmt::format("layer is truncated at {}", path));
      }
      return content;
    };
    const auto filetype = archive_entry_filetype(entry);
    EntryType type = filetype == AE_IFREG ? EntryType::kRegular
                     : filetype == AE_IFDIR ? EntryType::kDirectory
                                            : EntryType::kOther;
    auto more = visit(path, type, read);
    if (!more.ok()) {
      status = more.status();
    } else if (!*more) {
      break;
    }
  }
  archive_read_free(a);
  return status;
}

}  // namespace

Result<std::optional<std::string>> ReadFileFromLayer(const std::string& gzip_tar, const std::string& path) {
  const std::string wanted = NormalizePath(path);
  std::optional<std::string> found;
  CINCINNATI_RETURN_IF_ERROR(WalkLayer(gzip_tar, [&](const std::string& raw, EntryType type, const auto& read) -> Result<bool> {
    if (type != EntryType::kRegular || NormalizePath(raw) != wanted) return true;
    CINCINNATI_ASSIGN_OR_RETURN(found, read());
    return false;
  }));
  return found;
}

Status ExtractLayer(const std::string& gzip_tar, const std::string& dest,
                    const std::function<bool(const std::string& path, bool directory)>& keep,
                    const ExtractOptions& options) {
  namespace fs = std::filesystem;
  env::FileSystem& files = options.fs ? *options.fs : env::DefaultFileSystem();
  uint64_t total = 0;
  return WalkLayer(gzip_tar, [&](const std::string& raw, EntryType type, const auto& read) -> Result<bool> {
    std::string path = NormalizePath(raw);
    if (path.empty() && type == EntryType::kDirectory) return true;  // "./", the layer's root
    if (path.empty() || path.rfind("../", 0) == 0 || path.find("/../") != std::string::npos || path == "..") {
      return Status::InvalidArgument(fmt::format("layer entry '{}' leaves the destination", raw));
    }
    fs::path target = fs::path(dest) / path;
    std::string name = target.filename().string();
    if (name.rfind(".wh.", 0) == 0) {
      const std::string whited = name.substr(4);
      if (whited.empty() || whited == "." || whited == "..") {  // would remove the directory itself, or its parent
        return Status::InvalidArgument(fmt::format("layer entry '{}' is a whiteout of no file", raw));
      }
      if (name != ".wh..wh..opq") {  // opaque whiteouts are ignored, as upstream
        // A whiteout not applied would leave a file the layer deleted: an error.
        if (Status removed = files.RemoveTree(target.parent_path() / whited); !removed.ok()) {
          return removed.WithContext(fmt::format("layer entry '{}'", raw));
        }
        if (options.on_remove) {
          const size_t slash = path.rfind('/');
          options.on_remove((slash == std::string::npos ? "" : path.substr(0, slash + 1)) + whited);
        }
      }
      return true;
    }
    if (type == EntryType::kDirectory) {
      if (!keep(path, true)) return true;
      if (files.IsDirectory(target)) return true;
      return files.CreateDirectories(target);
    }
    if (type != EntryType::kRegular || !keep(path, false)) return true;
    CINCINNATI_ASSIGN_OR_RETURN(std::string content, read());
    total += content.size();
    if (total > options.max_total_bytes) {
      return Status::TooLarge(fmt::format("the layer unpacks to more than {} bytes", options.max_total_bytes));
    }
    CINCINNATI_RETURN_IF_ERROR(files.CreateDirectories(target.parent_path()));
    CINCINNATI_RETURN_IF_ERROR(env::WriteNewFile(target, content, files, 0644));
    if (options.on_file) options.on_file(path, content);
    return true;
  }, options.max_file_bytes);
}

Result<std::vector<LayerEntry>> DirectoryEntries(const std::string& dir, bool with_directories) {
  std::vector<LayerEntry> entries;
  env::FileSystem& fs = env::DefaultFileSystem();
  auto listed = fs.ListTree(dir);
  if (!listed.ok()) return Status::IoError(fmt::format("{}: {}", dir, listed.status().message()));
  for (const env::DirectoryEntry& entry : *listed) {
    if (with_directories && entry.type == env::FileType::kDirectory) {
      entries.push_back({entry.relative.generic_string(), "", true});
      continue;
    }
    if (entry.type != env::FileType::kRegular) continue;
    auto content = fs.ReadFile(entry.path, std::numeric_limits<size_t>::max() - 1);  // unreadable: empty
    entries.push_back({entry.relative.generic_string(), content.ok() ? std::move(content).value() : std::string()});
  }
  std::sort(entries.begin(), entries.end(), [](const auto& x, const auto& y) { return x.path < y.path; });
  return entries;
}

}  // namespace cincinnati::registry
