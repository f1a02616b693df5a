// Reading a graph-data directory (channels/ or blocked-edges/) as the reference does.
//
// Only the immediate entries are considered, in file-name order (the reference uses
// filesystem order; sorting makes runs reproducible). A file is read when its
// extension (text after the last '.', none for "_OWNERS" or ".hidden") matches the
// unanchored regex `ya+ml`. Problems carry one of the reference's error classes; the
// caller decides whether a class is tolerated or fails the run.
#pragma once

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace cincinnati::graphdata {

enum class ErrorClass { kFile, kDeserialize, kMissingExtension, kInvalidExtension };

std::string_view ErrorClassName(ErrorClass c);  // snake_case as in the reference config
Result<ErrorClass> ParseErrorClass(std::string_view name);
using ErrorClassSet = std::set<ErrorClass>;

struct FileProblem {
  ErrorClass error_class;
  std::string path;  // relative to the graph-data root, e.g. "blocked-edges/x.yml"
  std::string message;
};

struct YamlFile {
  std::string path;  // relative to the graph-data root
  std::string content;
};

// Reads a whole file. Errors name `display` (the path itself when empty): NotFound
// when it cannot be opened, IoError when reading fails.
Result<std::string> ReadFileToString(const std::filesystem::path& path, std::string_view display = {});

// The extension as Rust's Path::extension() defines it.
std::optional<std::string> FileExtension(std::string_view file_name);
bool IsYamlExtension(std::string_view extension);

// Reads `<root>/<subdir>`. A missing directory is an error (NotFound); per-file
// problems are appended to `problems`. A listed file that no longer exists when read
// (the tree changed mid-read, or a dangling symlink) fails the read (IoError naming it).
Result<std::vector<YamlFile>> ReadYamlDirectory(const std::filesystem::path& root, std::string_view subdir,
                                                std::vector<FileProblem>* problems);

}  // namespace cincinnati::graphdata
