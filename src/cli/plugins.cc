#include "cli/plugins.h"

#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

#include "builder/edge_add_remove.h"
#include "builder/graph_data_git_source.h"
#include "builder/graph_data_image_source.h"
#include "builder/node_remove.h"
#include "builder/registry_source.h"
#include "builder/release_sources.h"
#include "core/strings.h"
#include "graph-data/secondary_metadata.h"
#include "policy/arch_filter.h"
#include "policy/channel_filter.h"
#include "policy/channel_target.h"
#include "policy/hotfix_filter.h"

namespace cincinnati::cli {
namespace {

// Reads a plugin table's settings, refusing any it does not know.
class Reader {
 public:
  Reader(const PluginTable& t, std::set<std::string> known) : t_(t), known_(std::move(known)) {}
  Status Check() const {
    for (const auto& [k, v] : t_.settings) {
      if (!known_.count(k)) return Status::InvalidArgument(fmt::format("plugin '{}': unknown setting '{}'", t_.name, k));
    }
    return Status::OK();
  }
  std::string Get(const std::string& key, std::string fallback) const {
    auto it = t_.settings.find(key);
    return it == t_.settings.end() ? fallback : it->second;
  }
  Result<bool> Bool(const std::string& key, bool fallback) const {
    auto it = t_.settings.find(key);
    if (it == t_.settings.end()) return fallback;
    return ParseBool(t_.name + "." + key, it->second);
  }
  Result<uint64_t> Unsigned(const std::string& key, uint64_t fallback) const {
    auto it = t_.settings.find(key);
    if (it == t_.settings.end()) return fallback;
    Settings one;
    one.Set(t_.name + "." + key, it->second);
    return one.Unsigned(t_.name + "." + key, fallback);
  }
  // A comma-separated setting, items trimmed, empty ones dropped.
  std::vector<std::string> List(const std::string& key, std::vector<std::string> fallback) const {
    auto it = t_.settings.find(key);
    if (it == t_.settings.end() || TrimWhitespace(it->second).empty()) return fallback;
    std::vector<std::string> out;
    for (std::string_view item : Split(it->second, ',')) {
      if (!TrimWhitespace(item).empty()) out.emplace_back(TrimWhitespace(item));
    }
    return out;
  }
  const std::string& name() const { return t_.name; }

 private:
  const PluginTable& t_;
  std::set<std::string> known_;
};

using Step = Result<std::unique_ptr<GraphTransform>>;
using Factory = std::function<Step(const Reader&, const PluginEnvironment&)>;

struct Plugin {
  std::optional<PluginRole> role;  // nullopt: both services
  std::set<std::string> settings;
  Factory make;
};

template <typename T, typename... Args>
Step Make(Args&&... args) {
  return std::unique_ptr<GraphTransform>(std::make_unique<T>(std::forward<Args>(args)...));
}

Step NotInThisBuild(const Reader& r, const PluginEnvironment&) {
  return Status::InvalidArgument(fmt::format(
      "plugin '{}' needs GitHub or Quay and is not available in this build; use 'git-secondary-metadata-scrape' "
      "or 'dkrv2-secondary-metadata-scrape' for graph-data, and 'release-scrape-dockerv2' or 'local-releases' "
      "for releases", r.name()));
}

constexpr auto kBuilder = PluginRole::kGraphBuilder;
constexpr auto kPolicy = PluginRole::kPolicyEngine;

// The makers of the steps with more than a line of settings to read.
Step LocalReleases(const Reader& r, const PluginEnvironment&) {
  std::string path = r.Get("path", "");
  if (path.empty()) return Status::InvalidArgument("plugin 'local-releases': 'path' is required");
  ReleaseDirectoryOptions o;
  o.default_arch = r.Get("default_arch", o.default_arch);
  o.repository = r.Get("repository", o.repository);
  o.manifestref_key = r.Get("manifestref_key", o.manifestref_key);
  return std::unique_ptr<GraphTransform>(std::make_unique<LocalReleaseSource>(path, o));
}

Step RegistryScrape(const Reader& r, const PluginEnvironment&) {
  RegistrySourceSettings s;
  s.registry = r.Get("registry", s.registry);
  s.repository = r.Get("repository", s.repository);
  s.manifestref_key = r.Get("manifestref_key", s.manifestref_key);
  std::string concurrency = r.Get("fetch_concurrency", "16");
  s.fetch_concurrency = std::max(1, std::atoi(concurrency.c_str()));
  s.credentials = {r.Get("username", ""), r.Get("password", "")};
  s.client.ca_path = r.Get("root_certificate_dir", "");
  s.credentials_path = r.Get("credentials_path", "");
  s.cache_directory = r.Get("cache_directory", "");
  return std::unique_ptr<GraphTransform>(std::make_unique<RegistryReleaseSource>(s));
}

Step GraphDataImage(const Reader& r, const PluginEnvironment&) {
  GraphDataImageSettings s;
  s.registry = r.Get("registry", "");
  s.repository = r.Get("repository", "");
  s.tag = r.Get("tag", s.tag);
  if (s.registry.empty() || s.repository.empty() || s.tag.empty()) {
    return Status::InvalidArgument("plugin 'dkrv2-secondary-metadata-scrape': registry, repository and tag are required");
  }
  s.output_directory = r.Get("output_directory", "");
  if (s.output_directory.empty()) {
    return Status::InvalidArgument("plugin 'dkrv2-secondary-metadata-scrape': output_directory is required");
  }
  s.graph_data_path = r.Get("graph_data_path", s.graph_data_path);
  s.output_allowlist = r.List("output_allowlist", s.output_allowlist);
  s.credentials = {r.Get("username", ""), r.Get("password", "")};
  s.credentials_path = r.Get("credentials_path", "");
  s.client.ca_path = r.Get("root_certificate_dir", "");
  CINCINNATI_ASSIGN_OR_RETURN(s.verify_signature, r.Bool("verify_signature", false));
  s.signature_baseurl = r.Get("signature_baseurl", s.signature_baseurl);
  s.public_keys_path = r.Get("public_keys_path", "");
  return std::unique_ptr<GraphTransform>(std::make_unique<GraphDataImageSource>(s));
}

Step GraphDataGit(const Reader& r, const PluginEnvironment&) {
  GraphDataGitSettings s;
  s.url = r.Get("url", "");
  s.output_directory = r.Get("output_directory", "");
  if (s.url.empty() || s.output_directory.empty()) {
    return Status::InvalidArgument("plugin 'git-secondary-metadata-scrape': url and output_directory are required");
  }
  s.reference_branch = r.Get("reference_branch", s.reference_branch);
  s.reference_revision = r.Get("reference_revision", s.reference_revision);
  s.graph_data_path = r.Get("graph_data_path", s.graph_data_path);
  s.output_allowlist = r.List("output_allowlist", s.output_allowlist);
  return Make<GraphDataGitSource>(s);
}

Step SecondaryMetadata(const Reader& r, const PluginEnvironment&) {
  graphdata::SecondaryMetadataSettings s;
  s.data_directory = r.Get("data_directory", "");
  s.key_prefix = r.Get("key_prefix", s.key_prefix);
  s.default_arch = r.Get("default_arch", s.default_arch);
  for (const std::string& name : r.List("disallowed_errors", {})) {
    CINCINNATI_ASSIGN_OR_RETURN(graphdata::ErrorClass c, graphdata::ParseErrorClass(name));
    s.disallowed_errors.insert(c);
  }
  return std::unique_ptr<GraphTransform>(std::make_unique<graphdata::SecondaryMetadataParse>(s));
}

Step EdgeAddRemoveStep(const Reader& r, const PluginEnvironment&) {
  EdgeAddRemoveSettings s;
  s.key_prefix = r.Get("key_prefix", s.key_prefix);
  s.remove_all_edges_value = r.Get("remove_all_edges_value", s.remove_all_edges_value);
  CINCINNATI_ASSIGN_OR_RETURN(s.remove_consumed_metadata, r.Bool("remove_consumed_metadata", false));
  CINCINNATI_ASSIGN_OR_RETURN(s.include_conditional_edges, r.Bool("include_conditional_edges", true));
  return std::unique_ptr<GraphTransform>(std::make_unique<EdgeAddRemove>(s));
}

Step GraphFetch(const Reader& r, const PluginEnvironment& env) {
  if (!env.upstream) return Status::InvalidArgument("plugin 'cincinnati-graph-fetch' is not a step of this chain");
  env.upstream->url = r.Get("upstream", env.upstream->url);
  if (r.Get("timeout", "").empty()) return std::unique_ptr<GraphTransform>();
  CINCINNATI_ASSIGN_OR_RETURN(uint64_t secs, r.Unsigned("timeout", 30));
  env.upstream->timeout = std::chrono::milliseconds(secs * 1000);
  return std::unique_ptr<GraphTransform>();
}

// The one table of plugins, by the reference's names (and ours).
const std::map<std::string, Plugin>& Plugins() {
  static const auto* plugins = new std::map<std::string, Plugin>{
      {"local-releases",
       {kBuilder, {"path", "default_arch", "repository", "manifestref_key"},
        LocalReleases}},
      {"release-scrape-dockerv2",
       {kBuilder, {"registry", "repository", "manifestref_key", "fetch_concurrency", "username", "password",
         "credentials_path", "root_certificate_dir", "cache_directory"},
        RegistryScrape}},
      {"dkrv2-secondary-metadata-scrape",
       {kBuilder, {"registry", "repository", "tag", "output_directory", "graph_data_path", "output_allowlist", "username",
         "password", "credentials_path", "root_certificate_dir", "verify_signature", "signature_baseurl",
         "public_keys_path"},
        GraphDataImage}},
      {"git-secondary-metadata-scrape",
       {kBuilder, {"url", "reference_branch", "reference_revision", "output_directory", "graph_data_path",
                   "output_allowlist"},
        GraphDataGit}},
      {"openshift-secondary-metadata-parse",
       {kBuilder, {"data_directory", "key_prefix", "default_arch", "disallowed_errors"},
        SecondaryMetadata}},
      {"edge-add-remove",
       {kBuilder, {"key_prefix", "remove_all_edges_value", "remove_consumed_metadata", "include_conditional_edges"},
        EdgeAddRemoveStep}},
      {"node-remove",
       {std::nullopt, {"key_prefix"},
        [](const Reader& r, const PluginEnvironment& e) -> Step {
          // In a policy engine the records would be served to clients with its answers.
          return std::unique_ptr<GraphTransform>(std::make_unique<NodeRemove>(
              r.Get("key_prefix", std::string(kDefaultKeyPrefix)), e.role == PluginRole::kGraphBuilder));
        }}},
      {"channel-filter",
       {kPolicy, {"key_prefix", "key_suffix"},
        [](const Reader& r, const PluginEnvironment&) -> Step {
          return std::unique_ptr<GraphTransform>(std::make_unique<policy::ChannelFilter>(
              r.Get("key_prefix", std::string(kDefaultKeyPrefix)), r.Get("key_suffix", std::string(kChannelsSuffix))));
        }}},
      {"arch-filter",
       {kPolicy, {"key_prefix", "key_suffix", "default_arch", "default_arch_threshold_version"},
        [](const Reader& r, const PluginEnvironment&) -> Step {
          return std::unique_ptr<GraphTransform>(std::make_unique<policy::ArchFilter>(
              r.Get("key_prefix", std::string(kDefaultKeyPrefix)), r.Get("key_suffix", "release.arch"),
              r.Get("default_arch", "amd64")));
        }}},
      {"hotfix-filter",
       {kPolicy, {}, [](const Reader&, const PluginEnvironment&) { return Make<policy::HotfixFilter>(); }}},
      {"channel-target",
       {kPolicy, {"channels"},
        [](const Reader& r, const PluginEnvironment&) -> Step {
          std::vector<std::string> channels = r.List("channels", {});
          return Make<policy::ChannelTarget>(std::set<std::string>(channels.begin(), channels.end()));
        }}},
      {"phased-rollout",
       {kPolicy, {}, [](const Reader&, const PluginEnvironment& env) { return Make<policy::PhasedRollout>(env.clock); }}},
      {"cincinnati-graph-fetch",
       {kPolicy, {"upstream", "timeout"},
        GraphFetch}},
      {"github-secondary-metadata-scrape", {kBuilder, {}, NotInThisBuild}},
      {"quay-metadata", {kBuilder, {}, NotInThisBuild}},
  };
  return *plugins;
}

}  // namespace

Result<std::unique_ptr<GraphTransform>> MakeTransform(const PluginTable& table, PluginRole role,
                                                      const PluginEnvironment& environment) {
  auto it = Plugins().find(table.name);
  if (it == Plugins().end()) return Status::InvalidArgument(fmt::format("unknown plugin '{}'", table.name));
  const Plugin& plugin = it->second;
  if (plugin.role && *plugin.role != role) {
    return Status::InvalidArgument(fmt::format("plugin '{}' is a {} plugin; it cannot be in {}", table.name,
                                               *plugin.role == kBuilder ? "graph-builder" : "policy-engine",
                                               role == kBuilder ? "[[plugin_settings]]" : "[[policy]]"));
  }
  Reader reader(table, plugin.settings);
  CINCINNATI_RETURN_IF_ERROR(reader.Check());
  PluginEnvironment with_role = environment;
  with_role.role = role;
  return plugin.make(reader, with_role);
}

}  // namespace cincinnati::cli
