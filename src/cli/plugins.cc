#include "cli/plugins.h"

#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

#include "builder/edge_add_remove.h"
#include "builder/graph_data_image_source.h"
#include "builder/node_remove.h"
#include "builder/registry_source.h"
#include "builder/release_sources.h"
#include "core/strings.h"
#include "graph-data/secondary_metadata.h"
#include "policy/arch_filter.h"
#include "policy/channel_filter.h"

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

 private:
  const PluginTable& t_;
  std::set<std::string> known_;
};

using Factory = std::function<Result<std::unique_ptr<GraphTransform>>(const Reader&)>;

const std::map<std::string, std::pair<std::set<std::string>, Factory>>& Factories() {
  static const auto* factories = new std::map<std::string, std::pair<std::set<std::string>, Factory>>{
      {"local-releases",
       {{"path", "default_arch", "repository", "manifestref_key"},
        [](const Reader& r) -> Result<std::unique_ptr<GraphTransform>> {
          std::string path = r.Get("path", "");
          if (path.empty()) return Status::InvalidArgument("plugin 'local-releases': 'path' is required");
          ReleaseDirectoryOptions o;
          o.default_arch = r.Get("default_arch", o.default_arch);
          o.repository = r.Get("repository", o.repository);
          o.manifestref_key = r.Get("manifestref_key", o.manifestref_key);
          return std::unique_ptr<GraphTransform>(std::make_unique<LocalReleaseSource>(path, o));
        }}},
      {"release-scrape-dockerv2",
       {{"registry", "repository", "manifestref_key", "fetch_concurrency", "username", "password",
         "credentials_path", "root_certificate_dir", "cache_directory"},
        [](const Reader& r) -> Result<std::unique_ptr<GraphTransform>> {
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
        }}},
      {"dkrv2-secondary-metadata-scrape",
       {{"registry", "repository", "tag", "output_directory", "graph_data_path", "output_allowlist", "username",
         "password", "credentials_path", "root_certificate_dir", "verify_signature", "signature_baseurl",
         "public_keys_path"},
        [](const Reader& r) -> Result<std::unique_ptr<GraphTransform>> {
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
          if (std::string list = r.Get("output_allowlist", ""); !list.empty()) {
            s.output_allowlist.clear();
            for (std::string_view p : Split(list, ',')) s.output_allowlist.emplace_back(TrimWhitespace(p));
          }
          s.credentials = {r.Get("username", ""), r.Get("password", "")};
          s.credentials_path = r.Get("credentials_path", "");
          s.client.ca_path = r.Get("root_certificate_dir", "");
          CINCINNATI_ASSIGN_OR_RETURN(s.verify_signature, r.Bool("verify_signature", false));
          s.signature_baseurl = r.Get("signature_baseurl", s.signature_baseurl);
          s.public_keys_path = r.Get("public_keys_path", "");
          return std::unique_ptr<GraphTransform>(std::make_unique<GraphDataImageSource>(s));
        }}},
      {"openshift-secondary-metadata-parse",
       {{"data_directory", "key_prefix", "default_arch", "disallowed_errors"},
        [](const Reader& r) -> Result<std::unique_ptr<GraphTransform>> {
          graphdata::SecondaryMetadataSettings s;
          s.data_directory = r.Get("data_directory", "");
          s.key_prefix = r.Get("key_prefix", s.key_prefix);
          s.default_arch = r.Get("default_arch", s.default_arch);
          const std::string disallowed = r.Get("disallowed_errors", "");
          for (std::string_view name : Split(disallowed, ',')) {
            name = TrimWhitespace(name);
            if (name.empty()) continue;
            CINCINNATI_ASSIGN_OR_RETURN(graphdata::ErrorClass c, graphdata::ParseErrorClass(name));
            s.disallowed_errors.insert(c);
          }
          return std::unique_ptr<GraphTransform>(std::make_unique<graphdata::SecondaryMetadataParse>(s));
        }}},
      {"edge-add-remove",
       {{"key_prefix", "remove_all_edges_value", "remove_consumed_metadata", "include_conditional_edges"},
        [](const Reader& r) -> Result<std::unique_ptr<GraphTransform>> {
          EdgeAddRemoveSettings s;
          s.key_prefix = r.Get("key_prefix", s.key_prefix);
          s.remove_all_edges_value = r.Get("remove_all_edges_value", s.remove_all_edges_value);
          CINCINNATI_ASSIGN_OR_RETURN(s.remove_consumed_metadata, r.Bool("remove_consumed_metadata", false));
          CINCINNATI_ASSIGN_OR_RETURN(s.include_conditional_edges, r.Bool("include_conditional_edges", true));
          return std::unique_ptr<GraphTransform>(std::make_unique<EdgeAddRemove>(s));
        }}},
      {"node-remove",
       {{"key_prefix"},
        [](const Reader& r) -> Result<std::unique_ptr<GraphTransform>> {
          return std::unique_ptr<GraphTransform>(
              std::make_unique<NodeRemove>(r.Get("key_prefix", std::string(kDefaultKeyPrefix))));
        }}},
      {"channel-filter",
       {{"key_prefix", "key_suffix"},
        [](const Reader& r) -> Result<std::unique_ptr<GraphTransform>> {
          return std::unique_ptr<GraphTransform>(std::make_unique<policy::ChannelFilter>(
              r.Get("key_prefix", std::string(kDefaultKeyPrefix)), r.Get("key_suffix", std::string(kChannelsSuffix))));
        }}},
      {"arch-filter",
       {{"key_prefix", "key_suffix", "default_arch", "default_arch_threshold_version"},
        [](const Reader& r) -> Result<std::unique_ptr<GraphTransform>> {
          return std::unique_ptr<GraphTransform>(std::make_unique<policy::ArchFilter>(
              r.Get("key_prefix", std::string(kDefaultKeyPrefix)), r.Get("key_suffix", "release.arch"),
              r.Get("default_arch", "amd64")));
        }}},
  };
  return *factories;
}

}  // namespace

Result<std::unique_ptr<GraphTransform>> MakeTransform(const PluginTable& table) {
  static const std::set<std::string> kLater = {"github-secondary-metadata-scrape", "quay-metadata"};
  if (kLater.count(table.name)) {
    return Status::InvalidArgument(fmt::format(
        "plugin '{}' needs a registry or GitHub and is not available in this build yet; use 'local-releases' "
        "and 'openshift-secondary-metadata-parse' with a directory", table.name));
  }
  auto it = Factories().find(table.name);
  if (it == Factories().end()) return Status::InvalidArgument(fmt::format("unknown plugin '{}'", table.name));
  Reader reader(table, it->second.first);
  CINCINNATI_RETURN_IF_ERROR(reader.Check());
  return it->second.second(reader);
}

}  // namespace cincinnati::cli
