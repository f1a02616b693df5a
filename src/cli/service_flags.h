// The services' settings as flags and TOML keys (`graph-builder`, `policy-engine`,
// `serve`): each role's flags with their help, what --help shows as a flag's type and
// default, and the keys a TOML file may set. The reference's names, plus ours.
#pragma once

#include <set>
#include <string>
#include <vector>

namespace cincinnati::cli {

enum class Role { kGraphBuilder, kPolicyEngine, kServe };

struct Flag {
  std::string names;  // CLI11 names, e.g. "--service.port,--port"
  std::string key;    // settings key
  std::string help;
};

std::vector<Flag> Flags(Role role);
std::string FlagType(const std::string& key);                // what --help shows as its type
std::string FlagDefault(Role role, const std::string& key);  // what --help shows as its default ("": none)
std::set<std::string> KnownKeys(Role role);                  // the keys a TOML file may set

}  // namespace cincinnati::cli
