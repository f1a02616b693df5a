#include "graph-data/file_reader.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "env/file_system.h"

namespace fs = std::filesystem;

namespace cincinnati::graphdata {

std::string_view ErrorClassName(ErrorClass c) {
  switch (c) {
    case ErrorClass::kFile: return "file";
    case ErrorClass::kDeserialize: return "deserialize";
    case ErrorClass::kMissingExtension: return "missing_extension";
    case ErrorClass::kInvalidExtension: return "invalid_extension";
  }
  return "unknown";
}

Result<ErrorClass> ParseErrorClass(std::string_view name) {
  for (ErrorClass c : {ErrorClass::kFile, ErrorClass::kDeserialize, ErrorClass::kMissingExtension,
                       ErrorClass::kInvalidExtension}) {
    if (ErrorClassName(c) == name) return c;
  }
  return Status::InvalidArgument(fmt::format(
      "unknown error class '{}' (expected file, deserialize, missing_extension or invalid_extension)", name));
}

Result<std::string> ReadFileToString(const fs::path& path, std::string_view display) {
  std::string name = display.empty() ? path.string() : std::string(display);
  // Any kind of file (a FIFO from <(...) too), as a command's FILE argument may be.
  auto text = env::DefaultFileSystem().ReadStream(path, std::numeric_limits<size_t>::max());
  if (text.ok()) return text;
  if (text.status().code() == Status::Code::kNotFound) return Status::NotFound(fmt::format("{}: file is missing or unreadable", name));
  return Status::IoError(fmt::format("{}: read failed", name));
}

std::optional<std::string> FileExtension(std::string_view name) {
  if (name == "..") return std::nullopt;
  size_t dot = name.rfind('.');
  if (dot == std::string_view::npos || dot == 0) return std::nullopt;
  return std::string(name.substr(dot + 1));
}

bool IsYamlExtension(std::string_view ext) {
  // Unanchored `ya+ml`: "ya", one or more further 'a', then "ml", anywhere.
  for (size_t i = 0; i + 4 <= ext.size(); ++i) {
    if (ext[i] != 'y' || ext[i + 1] != 'a') continue;
    size_t j = i + 2;
    while (j < ext.size() && ext[j] == 'a') ++j;
    if (ext.substr(j, 2) == "ml") return true;
  }
  return false;
}

Result<std::vector<YamlFile>> ReadYamlDirectory(const fs::path& root, std::string_view subdir,
                                                std::vector<FileProblem>* problems) {
  fs::path dir = root / subdir;
  env::FileSystem& disk = env::DefaultFileSystem();
  if (!disk.IsDirectory(dir)) {
    return Status::NotFound(fmt::format("{}/: directory is missing", subdir));
  }
  auto listed = disk.ListDirectory(dir);
  if (!listed.ok()) return Status::IoError(fmt::format("{}/: cannot list directory: {}", subdir, listed.status().message()));
  std::vector<env::DirectoryEntry> entries = std::move(listed).value();
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.path.filename() < b.path.filename(); });

  std::vector<YamlFile> files;
  for (const auto& entry : entries) {
    std::string name = entry.path.filename().string();
    std::string rel = fmt::format("{}/{}", subdir, name);
    // Placeholders that keep an empty directory in git are not graph-data.
    if (name == ".keep" || name == ".gitkeep") continue;
    auto ext = FileExtension(name);
    if (!ext) {
      problems->push_back({ErrorClass::kMissingExtension, rel, "file has no extension"});
      continue;
    }
    if (!IsYamlExtension(*ext)) {
      problems->push_back({ErrorClass::kInvalidExtension, rel,
                           fmt::format("extension '{}' does not match 'ya+ml'", *ext)});
      continue;
    }
    // A file listed a moment ago that is gone now means the tree is changing under us
    // (a checkout or sync in progress): the whole read fails rather than yield a graph
    // missing that file; the caller keeps its last good graph and retries.
    auto vanished = [&] {
      return Status::IoError(fmt::format("{}: vanished while the graph-data was being read", rel));
    };
    const env::FileInfo info = disk.Stat(entry.path);
    if (!info.exists()) return vanished();
    if (!info.is_regular()) {
      problems->push_back({ErrorClass::kFile, rel, "not a regular file"});
      continue;
    }
    auto content = ReadFileToString(entry.path, rel);
    if (!content.ok() && content.status().code() == Status::Code::kNotFound && !disk.Exists(entry.path)) {
      return vanished();
    }
    if (!content.ok()) {
      problems->push_back({ErrorClass::kFile, rel, "cannot read file"});
      continue;
    }
    files.push_back(YamlFile{rel, std::move(content).value()});
  }
  return files;
}

}  // namespace cincinnati::graphdata
