// PluginSettings: one plugin table of a service's configuration ([[plugin_settings]] in
// a graph builder, [[policy]] in a policy engine), as the parser beside each transform
// reads it. The reference's plugins each deserialize their own settings next to their
// code and one catalog maps names to them; here each transform's header declares a
// `...FromSettings(const PluginSettings&)` and cli/plugins.cc is the one table of names.
//
// Values are the strings TOML and flags give; a parser first calls CheckKnown with every
// setting it reads, so a misspelled setting is an error naming the plugin and the
// setting, never a silent default. Errors are InvalidArgument and name
// "setting 'PLUGIN.KEY'". Plain value; never throws.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/transform.h"

namespace cincinnati {

class PluginSettings {
 public:
  PluginSettings(std::string name, std::map<std::string, std::string> settings)
      : name_(std::move(name)), settings_(std::move(settings)) {}

  const std::string& name() const { return name_; }
  // OK when every setting present is one of `known`.
  Status CheckKnown(const std::set<std::string>& known) const;
  std::string Get(const std::string& key, std::string fallback) const;
  // "true" or "false".
  Result<bool> Bool(const std::string& key, bool fallback) const;
  // Decimal digits only.
  Result<uint64_t> Unsigned(const std::string& key, uint64_t fallback) const;
  // A comma-separated setting, items trimmed, empty ones dropped; `fallback` when the
  // setting is absent or blank.
  std::vector<std::string> List(const std::string& key, std::vector<std::string> fallback) const;

 private:
  std::string name_;
  std::map<std::string, std::string> settings_;
};

// What a plugin's parser returns: its step.
using PluginStep = Result<std::unique_ptr<GraphTransform>>;

}  // namespace cincinnati
