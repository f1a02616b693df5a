#include "deploy/manifest_checks.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "test_util.h"

namespace cincinnati::deploy {

namespace fs = std::filesystem;

fs::path KubernetesDir() { return testing::Examples().parent_path() / "deploy" / "kubernetes"; }

Manifests Load(const fs::path& dir) {
  Manifests out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".yaml") continue;
    for (const YAML::Node& doc : YAML::LoadAllFromFile(entry.path().string())) {
      out.push_back({entry.path().filename().string(), doc});
    }
  }
  return out;
}

// A deep copy, for breaking it.
Manifests Clone(const Manifests& in) {
  Manifests out;
  for (const Manifest& m : in) out.push_back({m.file, YAML::Clone(m.doc)});
  return out;
}

std::string Str(const YAML::Node& node) {
  return node.IsDefined() && node.IsScalar() ? node.Scalar() : std::string();
}
// node[key], or an undefined node when node is not a map with that key (yaml-cpp
// throws when a missing key's node is indexed further).
YAML::Node Child(const YAML::Node& node, const std::string& key) {
  if (node.IsDefined() && node.IsMap() && node[key]) return node[key];
  return YAML::Node(YAML::NodeType::Undefined);
}
// Whether a Secret has `key` (in stringData or data).
bool SecretHas(const Manifest& secret, const std::string& key) {
  return Child(secret.doc["stringData"], key).IsDefined() || Child(secret.doc["data"], key).IsDefined();
}
std::string Kind(const Manifest& m) { return Str(m.doc["kind"]); }
std::string Name(const Manifest& m) { return Str(m.doc["metadata"]["name"]); }
std::string Where(const Manifest& m) { return m.file + ": " + Kind(m) + " " + Name(m); }

const Manifest* Find(const Manifests& all, const std::string& kind, const std::string& name) {
  for (const Manifest& m : all) {
    if (Kind(m) == kind && Name(m) == name) return &m;
  }
  return nullptr;
}

bool IsWorkload(const Manifest& m) { return Kind(m) == "Deployment" || Kind(m) == "StatefulSet"; }
YAML::Node PodSpec(const Manifest& m) { return m.doc["spec"]["template"]["spec"]; }

// The service role a container runs ("graph-builder", "policy-engine", "serve"), or "".
std::string Role(const YAML::Node& container) {
  const YAML::Node args = Child(container, "args");
  const std::string first = args.IsSequence() && args.size() > 0 ? Str(args[0]) : "";
  return first == "graph-builder" || first == "policy-engine" || first == "serve" ? first : "";
}

// A cincinnati container's flags: "--name=value" -> {name, value}; "-v" -> {"-v", ""}.
// An argument that is not a flag is kept under its own text, so that it is reported.
std::map<std::string, std::string> Flags(const YAML::Node& container) {
  std::map<std::string, std::string> out;
  const YAML::Node& args = container["args"];
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string arg = Str(args[i]);
    const size_t eq = arg.find('=');
    out[arg.substr(0, eq)] = eq == std::string::npos ? "" : arg.substr(eq + 1);
  }
  return out;
}

// Each cincinnati container of the manifests with its workload.
void ForEachServiceContainer(const Manifests& all,
                             const std::function<void(const Manifest&, const YAML::Node& pod, const YAML::Node& container)>& fn) {
  for (const Manifest& m : all) {
    if (!IsWorkload(m)) continue;
    const YAML::Node pod = PodSpec(m);
    for (const YAML::Node& container : pod["containers"]) {
      if (!Role(container).empty()) fn(m, pod, container);
    }
  }
}

// The options `cincinnati ROLE --help` lists, each with the type its help names
// ("PATH", "PORT", "URL"; "" for a switch): the names at the start of its option lines
// ("  -c,--config PATH  ..." gives -c and --config), not flags its descriptions mention.
const std::map<std::string, std::string>& HelpFlags(const std::string& role) {
  static std::map<std::string, std::map<std::string, std::string>> cache;
  auto found = cache.find(role);
  if (found != cache.end()) return found->second;
  std::map<std::string, std::string>& flags = cache[role];
  const std::string command = std::string(CINCINNATI_BINARY) + " " + role + " --help 2>&1";
  std::string text;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    char buffer[4096];
    for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0;) text.append(buffer, n);
    EXPECT_EQ(::pclose(pipe), 0) << command << "\n" << text;
  }
  static const std::regex option_line(R"(^\s+(--?[A-Za-z0-9][^\s]*)(?: ([A-Z][A-Z_]*))?)");
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, option_line)) continue;
    const std::string names = m[1], type = m[2].matched ? std::string(m[2]) : "";
    for (size_t start = 0; start < names.size();) {
      size_t comma = names.find(',', start);
      if (comma == std::string::npos) comma = names.size();
      flags[names.substr(start, comma - start)] = type;
      start = comma + 1;
    }
  }
  EXPECT_GT(flags.size(), 10u) << command << " lists too few options:\n" << text;
  const auto status = flags.find("--status.port");
  EXPECT_TRUE(status != flags.end() && status->second == "PORT") << "the help's format changed:\n" << text;
  return flags;
}

// ---- The checks: each returns what is wrong ----

// Every argument of a service container is a flag its role's --help lists.
Problems FlagProblems(const Manifests& all) {
  Problems out;
  ForEachServiceContainer(all, [&](const Manifest& m, const YAML::Node&, const YAML::Node& container) {
    const std::string role = Role(container);
    for (const auto& [flag, value] : Flags(container)) {
      if (flag.rfind("-", 0) != 0) {
        out.push_back(Where(m) + ": '" + flag + "' is not a flag (write --name=value)");
      } else if (!HelpFlags(role).count(flag)) {
        out.push_back(Where(m) + ": " + flag + " is not a flag of `cincinnati " + role + "` (its --help does not list it)");
      }
    }
  });
  return out;
}

// Every Secret key a pod mounts or references exists in that Secret.
Problems SecretKeyProblems(const Manifests& all) {
  Problems out;
  auto check = [&](const Manifest& m, const std::string& secret, const std::string& key) {
    const Manifest* s = Find(all, "Secret", secret);
    if (!s) {
      out.push_back(Where(m) + ": no Secret " + secret);
    } else if (!key.empty() && !SecretHas(*s, key)) {
      out.push_back(Where(m) + ": Secret " + secret + " has no key " + key);
    }
  };
  for (const Manifest& m : all) {
    if (!IsWorkload(m)) continue;
    const YAML::Node pod = PodSpec(m);
    for (const YAML::Node& volume : pod["volumes"]) {
      if (!volume["secret"]) continue;
      const std::string secret = Str(volume["secret"]["secretName"]);
      check(m, secret, "");
      for (const YAML::Node& item : volume["secret"]["items"]) check(m, secret, Str(item["key"]));
    }
    for (const char* list : {"containers", "initContainers"}) {
      for (const YAML::Node& container : pod[list]) {
        for (const YAML::Node& env : container["env"]) {
          const YAML::Node ref = Child(Child(env, "valueFrom"), "secretKeyRef");
          if (ref) check(m, Str(ref["name"]), Str(ref["key"]));
        }
        for (const YAML::Node& from : container["envFrom"]) {
          if (from["secretRef"]) check(m, Str(from["secretRef"]["name"]), "");
        }
      }
    }
  }
  return out;
}

// The volume mount of `container` that holds `path`, and the path inside the volume.
struct MountedAt {
  YAML::Node mount, volume;
  std::string inside;
};
std::optional<MountedAt> MountOf(const YAML::Node& pod, const YAML::Node& container, const std::string& path) {
  for (const YAML::Node& mount : container["volumeMounts"]) {
    const std::string at = Str(mount["mountPath"]);
    std::string inside;
    if (mount["subPath"] && path == at) {
      inside = Str(mount["subPath"]);
    } else if (!mount["subPath"] && !at.empty() && path.rfind(at + "/", 0) == 0) {
      inside = path.substr(at.size() + 1);
    } else if (!mount["subPath"] && path == at) {
      inside = "";
    } else {
      continue;
    }
    for (const YAML::Node& volume : pod["volumes"]) {
      if (Str(volume["name"]) == Str(mount["name"])) return MountedAt{mount, volume, inside};
    }
    return MountedAt{mount, YAML::Node(), inside};
  }
  return std::nullopt;
}

// The Secret and key whose file a container reads at `path`, or why there is none.
struct SecretFile {
  std::string secret, key, problem;
};
SecretFile SecretFileAt(const Manifests& all, const YAML::Node& pod, const YAML::Node& container, const std::string& path) {
  const std::optional<MountedAt> at = MountOf(pod, container, path);
  if (!at) return {"", "", path + " is on no volume mount of the container"};
  if (!at->volume) return {"", "", path + ": the pod has no volume " + Str(at->mount["name"])};
  const YAML::Node secret = at->volume["secret"];
  if (!secret) return {"", "", path + " is on volume " + Str(at->volume["name"]) + ", not a Secret"};
  SecretFile out{Str(secret["secretName"]), "", ""};
  if (secret["items"]) {
    for (const YAML::Node& item : secret["items"]) {
      if (Str(item["path"]) == at->inside) out.key = Str(item["key"]);
    }
    if (out.key.empty()) out.problem = path + ": Secret volume " + Str(at->volume["name"]) + " projects no item at " + at->inside;
  } else {
    out.key = at->inside;  // every key of the Secret, each a file named after it
  }
  const Manifest* s = Find(all, "Secret", out.secret);
  if (out.problem.empty() && (!s || !SecretHas(*s, out.key))) {
    out.problem = path + ": Secret " + out.secret + " has no key " + out.key;
  }
  return out;
}

// Every *_file flag reads a file a Secret volume mounts at that path; every other path
// a flag names (its help says PATH or DIR) is on a mount of the container, writable
// when the service writes there (reports.state_dir).
Problems FileFlagProblems(const Manifests& all) {
  Problems out;
  ForEachServiceContainer(all, [&](const Manifest& m, const YAML::Node& pod, const YAML::Node& container) {
    for (const auto& [flag, value] : Flags(container)) {
      const bool file_flag = flag.size() > 5 && flag.compare(flag.size() - 5, 5, "_file") == 0;
      if (file_flag) {
        const SecretFile f = SecretFileAt(all, pod, container, value);
        if (!f.problem.empty()) out.push_back(Where(m) + ": " + flag + ": " + f.problem);
      } else if (const std::string type = HelpFlags(Role(container)).count(flag) ? HelpFlags(Role(container)).at(flag) : "";
                 type == "PATH" || type == "DIR") {
        const std::optional<MountedAt> at = MountOf(pod, container, value);
        if (!at) {
          out.push_back(Where(m) + ": " + flag + ": " + value + " is on no volume mount of the container");
        } else if (flag == "--reports.state_dir" && at->mount["readOnly"] && at->mount["readOnly"].as<bool>()) {
          out.push_back(Where(m) + ": " + flag + ": " + value + " is on a read-only mount");
        }
      }
    }
  });
  return out;
}

bool Selects(const YAML::Node& selector, const YAML::Node& labels) {
  if (!selector || selector.size() == 0) return false;
  for (const auto& pair : selector) {
    if (Str(labels[pair.first.Scalar()]) != Str(pair.second)) return false;
  }
  return true;
}

// The workloads whose pods a selector selects.
std::vector<const Manifest*> Selected(const Manifests& all, const YAML::Node& selector) {
  std::vector<const Manifest*> out;
  for (const Manifest& m : all) {
    if (IsWorkload(m) && Selects(selector, m.doc["spec"]["template"]["metadata"]["labels"])) out.push_back(&m);
  }
  return out;
}

// Whether a workload's containers have `port` (a number or a port name).
bool HasContainerPort(const Manifest& workload, const std::string& port) {
  for (const YAML::Node& container : PodSpec(workload)["containers"]) {
    for (const YAML::Node& p : container["ports"]) {
      if (Str(p["containerPort"]) == port || Str(p["name"]) == port) return true;
    }
  }
  return false;
}

// Workloads select their own pods; every Service and PodDisruptionBudget selects
// exactly one workload; a Service's target ports are ports of that workload's
// containers; every Deployment has a PodDisruptionBudget.
Problems SelectorProblems(const Manifests& all) {
  Problems out;
  std::set<const Manifest*> budgeted;
  for (const Manifest& m : all) {
    if (IsWorkload(m) && !Selects(m.doc["spec"]["selector"]["matchLabels"], m.doc["spec"]["template"]["metadata"]["labels"])) {
      out.push_back(Where(m) + ": its selector does not select its own pods");
    }
    if (Kind(m) != "Service" && Kind(m) != "PodDisruptionBudget") continue;
    const YAML::Node selector = Kind(m) == "Service" ? m.doc["spec"]["selector"] : m.doc["spec"]["selector"]["matchLabels"];
    const std::vector<const Manifest*> selected = Selected(all, selector);
    if (selected.size() != 1) {
      out.push_back(Where(m) + ": selects " + std::to_string(selected.size()) + " workloads, not one");
      continue;
    }
    if (Kind(m) == "PodDisruptionBudget") budgeted.insert(selected[0]);
    for (const YAML::Node& port : m.doc["spec"]["ports"]) {
      const std::string target = port["targetPort"] ? Str(port["targetPort"]) : Str(port["port"]);
      if (!HasContainerPort(*selected[0], target)) {
        out.push_back(Where(m) + ": target port " + target + " is no container port of " + Name(*selected[0]));
      }
    }
  }
  for (const Manifest& m : all) {
    if (Kind(m) == "Deployment" && !budgeted.count(&m)) out.push_back(Where(m) + ": no PodDisruptionBudget selects it");
  }
  return out;
}

// A service container's probes ask its status listener (--status.port) for its role's
// routes, and its --service.port and --status.port are container ports.
Problems ProbeProblems(const Manifests& all) {
  Problems out;
  ForEachServiceContainer(all, [&](const Manifest& m, const YAML::Node&, const YAML::Node& container) {
    const std::string role = Role(container);
    std::map<std::string, std::string> flags = Flags(container);
    const std::set<std::string> routes = role == "graph-builder"   ? std::set<std::string>{"/liveness", "/readiness"}
                                         : role == "policy-engine" ? std::set<std::string>{"/livez", "/readyz"}
                                                                   : std::set<std::string>{"/livez", "/readyz", "/liveness", "/readiness"};
    std::set<std::string> ports;
    for (const YAML::Node& p : container["ports"]) ports.insert(Str(p["containerPort"]));
    for (const char* flag : {"--service.port", "--status.port"}) {
      if (!ports.count(flags[flag])) out.push_back(Where(m) + ": " + flag + "=" + flags[flag] + " is not a container port");
    }
    int probes = 0;
    for (const char* probe : {"livenessProbe", "readinessProbe", "startupProbe"}) {
      if (!container[probe]) continue;
      ++probes;
      const std::string path = Str(Child(Child(container[probe], "httpGet"), "path"));
      const std::string port = Str(Child(Child(container[probe], "httpGet"), "port"));
      if (!routes.count(path)) out.push_back(Where(m) + ": " + probe + " asks " + path + ", not a status route of " + role);
      if (port != flags["--status.port"]) out.push_back(Where(m) + ": " + probe + " asks port " + port + ", not --status.port");
    }
    if (probes < 2) out.push_back(Where(m) + ": needs a liveness and a readiness probe");
  });
  return out;
}

// The one container of the role, with its pod (nullptr when there is none).
struct RoleContainer {
  const Manifest* workload = nullptr;
  YAML::Node pod, container;
};
RoleContainer Only(const Manifests& all, const std::string& role, Problems& out) {
  RoleContainer found;
  int count = 0;
  ForEachServiceContainer(all, [&](const Manifest& m, const YAML::Node& pod, const YAML::Node& container) {
    if (Role(container) != role) return;
    ++count;
    found = {&m, pod, container};
  });
  if (count != 1) out.push_back("expected one " + role + " container, found " + std::to_string(count));
  return count == 1 ? found : RoleContainer{};
}

// The policy engines' upstream URL is the graph builders' Service, at the Service port
// that leads to the graph builder's --service.port, with its path prefix; reports go
// there with the token the graph builders expect; both tiers share one PostgreSQL URL;
// every policy engine has the receipt key; both tiers are replicated.
Problems WiringProblems(const Manifests& all) {
  Problems out;
  const RoleContainer gb = Only(all, "graph-builder", out), pe = Only(all, "policy-engine", out);
  if (!gb.workload || !pe.workload) return out;
  std::map<std::string, std::string> gb_flags = Flags(gb.container), pe_flags = Flags(pe.container);
  const std::string url = pe_flags["--upstream.cincinnati.url"];
  static const std::regex http_url(R"(^http://([^:/]+)(?::([0-9]+))?(/.*)?$)");
  std::smatch parts;
  if (!std::regex_match(url, parts, http_url)) {
    out.push_back("the policy engine's --upstream.cincinnati.url '" + url + "' is not an http:// URL");
    return out;
  }
  const std::string host = parts[1], service_name = host.substr(0, host.find('.'));
  const std::string port = parts[2].matched ? std::string(parts[2]) : "80", path = parts[3];
  const Manifest* service = Find(all, "Service", service_name);
  if (!service) {
    out.push_back("--upstream.cincinnati.url names " + host + ", which is no Service here");
  } else {
    const std::vector<const Manifest*> selected = Selected(all, service->doc["spec"]["selector"]);
    if (selected.size() != 1 || selected[0] != gb.workload) {
      out.push_back("--upstream.cincinnati.url: Service " + service_name + " does not select the graph builders");
    }
    std::string target;
    for (const YAML::Node& p : service->doc["spec"]["ports"]) {
      if (Str(p["port"]) == port) target = p["targetPort"] ? Str(p["targetPort"]) : port;
    }
    // A named target port stands for the container port of that name.
    for (const YAML::Node& p : gb.container["ports"]) {
      if (Str(p["name"]) == target) target = Str(p["containerPort"]);
    }
    if (target != gb_flags["--service.port"]) {
      out.push_back("--upstream.cincinnati.url: port " + port + " of Service " + service_name +
                    " does not lead to the graph builder's --service.port " + gb_flags["--service.port"]);
    }
  }
  const std::string graph_path = gb_flags["--service.path_prefix"] + "/graph";
  if (path != graph_path) out.push_back("--upstream.cincinnati.url's path " + path + " is not the graph builder's " + graph_path);

  // Files that must be the same Secret key in both tiers.
  auto key_of = [&](const RoleContainer& rc, std::map<std::string, std::string>& flags, const std::string& flag) {
    if (!flags.count(flag)) {
      out.push_back(Str(rc.container["args"][0]) + " has no " + flag);
      return std::string();
    }
    const SecretFile f = SecretFileAt(all, rc.pod, rc.container, flags[flag]);
    return f.problem.empty() ? f.secret + "/" + f.key : std::string();
  };
  const std::string gb_token = key_of(gb, gb_flags, "--reports.token_file");
  const std::string pe_token = key_of(pe, pe_flags, "--reports.upstream_token_file");
  if (gb_token != pe_token) {
    out.push_back("policy engines forward reports with " + pe_token + ", graph builders expect " + gb_token);
  }
  const std::string gb_db = key_of(gb, gb_flags, "--reports.postgres_file");
  const std::string pe_db = key_of(pe, pe_flags, "--reports.postgres_file");
  if (gb_db != pe_db) out.push_back("graph builders use PostgreSQL URL " + gb_db + ", policy engines " + pe_db);
  if (key_of(pe, pe_flags, "--reports.receipt_key_file").empty()) out.push_back("policy engines have no shared receipt key");
  if (pe_flags["--reports.enabled"] != "true") out.push_back("policy engines do not take reports (--reports.enabled=true)");
  for (const RoleContainer* rc : {&gb, &pe}) {
    const YAML::Node replicas = rc->workload->doc["spec"]["replicas"];
    if (!replicas || replicas.as<int>() < 2) out.push_back(Name(*rc->workload) + " is not replicated (replicas < 2)");
  }
  return out;
}

// The Secret's placeholder PostgreSQL URL names the optional instance's Service and port.
Problems PostgresProblems(const Manifests& all) {
  Problems out;
  const Manifest* shared = Find(all, "Secret", "cincinnati-shared");
  if (!shared) return {"no Secret cincinnati-shared"};
  static const std::regex pg_url(R"(^postgres(?:ql)?://[^@/]*@([^:/?]+)(?::([0-9]+))?/.*$)");
  const std::string url = Str(Child(Child(shared->doc, "stringData"), "postgres-url"));
  std::smatch parts;
  if (!std::regex_match(url, parts, pg_url)) return {"cincinnati-shared's postgres-url '" + url + "' is not a postgresql://USER@HOST/DB URL"};
  const std::string host = parts[1], port = parts[2].matched ? std::string(parts[2]) : "5432";
  const Manifest* service = Find(all, "Service", host);
  const Manifest* statefulset = Find(all, "StatefulSet", host);
  if (!service || !statefulset) return {"postgres-url names " + host + ", not the optional PostgreSQL's Service and StatefulSet"};
  bool has_port = false;
  for (const YAML::Node& p : service->doc["spec"]["ports"]) has_port = has_port || Str(p["port"]) == port;
  if (!has_port) out.push_back("postgres-url's port " + port + " is no port of Service " + host);
  return out;
}

std::string Join(const Problems& problems) {
  std::string out;
  for (const std::string& p : problems) out += "  " + p + "\n";
  return out;
}

}  // namespace cincinnati::deploy
