// The Kubernetes manifests of deploy/kubernetes/ as data, and the checks the replicated set
// (deploy/kubernetes/replicated/) must pass against the binary and against itself, without
// a cluster: each check returns what is wrong, so a test can also run it on a broken copy
// and see it complain. Loading a file that does not parse throws (yaml-cpp); the tests
// assert it does not.
#pragma once

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <string>
#include <vector>

namespace cincinnati::deploy {

struct Manifest {
  std::string file;  // for messages
  YAML::Node doc;
};
using Manifests = std::vector<Manifest>;
using Problems = std::vector<std::string>;

std::filesystem::path KubernetesDir();
Manifests Load(const std::filesystem::path& dir);  // every document of every .yaml file
Manifests Clone(const Manifests& in);               // deep copies, to break one
std::string Kind(const Manifest& m);
std::string Name(const Manifest& m);
const Manifest* Find(const Manifests& all, const std::string& kind, const std::string& name);
std::string Join(const Problems& problems);  // one per line, for a failure message

// Every argument of a service container is a flag its role's --help lists.
Problems FlagProblems(const Manifests& all);
// Every Secret key a pod mounts or references exists in its Secret.
Problems SecretKeyProblems(const Manifests& all);
// Every *_file flag reads a file a mounted Secret provides; other paths are on a mount.
Problems FileFlagProblems(const Manifests& all);
// Services and budgets select exactly one workload; target ports are container ports.
Problems SelectorProblems(const Manifests& all);
// Probes ask the role's status routes on the status port.
Problems ProbeProblems(const Manifests& all);
// The policy engines reach the graph builders' Service; the tiers share their secrets.
Problems WiringProblems(const Manifests& all);
// The Secret's placeholder database is the optional PostgreSQL's Service and port.
Problems PostgresProblems(const Manifests& all);

}  // namespace cincinnati::deploy
