// Settings: a service's configuration as the reference takes it, from command-line
// flags and a TOML file (`-c`), merged in the reference's order: defaults, then flags,
// then the file (the file wins for a key given both ways).
//
// Both sources are flattened to dotted keys ("service.port"); a list is kept as a
// comma-separated string. Plugin tables ([[plugin_settings]] for the graph builder,
// [[policy]] for the policy engine) are kept in order. Any key the service does not
// know is an error that names it and the file.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"

namespace cincinnati::cli {

struct PluginTable {
  std::string name;
  std::map<std::string, std::string> settings;  // without "name"
};

class Settings {
 public:
  void Set(const std::string& key, std::string value) {
    values_[key] = std::move(value);
    files_.erase(key);
  }
  // Merges a TOML file over the current values. `known` lists the accepted keys;
  // `plugin_tables` the accepted array-of-tables names.
  Status MergeToml(const std::string& path, const std::set<std::string>& known,
                   const std::set<std::string>& plugin_tables);

  bool Has(const std::string& key) const { return values_.count(key) != 0; }
  std::string String(const std::string& key, const std::string& fallback) const;
  Result<uint64_t> Unsigned(const std::string& key, uint64_t fallback) const;
  Result<bool> Bool(const std::string& key, bool fallback) const;
  // "FILE: setting 'KEY'" when a TOML file set it, else "setting 'KEY'": for messages.
  std::string Describe(const std::string& key) const;
  std::vector<std::string> List(const std::string& key) const;
  const std::vector<PluginTable>& plugins(const std::string& table) const;

 private:
  std::map<std::string, std::string> values_;
  std::map<std::string, std::string> files_;  // key -> the TOML file that set it
  std::map<std::string, std::vector<PluginTable>> plugins_;
};

// Reads a boolean setting ("true"/"false").
Result<bool> ParseBool(const std::string& key, const std::string& value);

}  // namespace cincinnati::cli
