// "release-scrape-dockerv2": releases from a container registry (openshift/cincinnati: cincinnati/src/plugins/internal/graph_builder/release_scrape_dockerv2/).
//
// Lists the repository's tags, reads each tag's image with at most
// `fetch_concurrency` in flight, and builds the raw graph. Per the reference's failure
// matrix: a tag whose manifest cannot be read (or a ".sig" tag) is skipped, as is an
// image without release metadata and a single-arch shard of a multi-arch release;
// failing to list tags or to download a layer fails the scrape. Results are cached by
// manifest digest, positive and negative, for the life of the transform, so later
// scrapes only re-list tags and manifests. With a cache directory the results also
// persist on disk (one small JSON file per digest), so a restart does not download
// every layer again. Payloads are "<host_port>/<repo>@<digest>". Each scrape notes its
// progress (tags listed, manifests read, layers fetched, cache hits) as diagnostics.
// A scrape observes the context's stop token: once requested, no new tag is started,
// requests in flight end within about a second, the workers are joined and the scrape
// fails ("cancelled"); nothing outlives Apply().
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "core/metadata_keys.h"
#include "core/plugin_settings.h"
#include "core/release_metadata.h"
#include "core/transform.h"
#include "registry/client.h"

namespace cincinnati {

struct RegistrySourceSettings {
  std::string registry = "quay.io";
  std::string repository = "openshift-release-dev/ocp-release";
  std::string manifestref_key = std::string(kManifestRefKey);
  size_t fetch_concurrency = 16;
  registry::Credentials credentials;
  std::string credentials_path;  // dockercfg; wins over `credentials`
  std::string cache_directory;   // empty: cache in memory only
  registry::ClientOptions client;
  size_t tags_page_size = 20;
};

class RegistryReleaseSource : public GraphTransform {
 public:
  explicit RegistryReleaseSource(RegistrySourceSettings settings);
  std::string_view name() const override { return "release-scrape-dockerv2"; }
  Result<Graph> Apply(Graph graph, TransformContext& context) const override;

  struct Counters {
    std::atomic<size_t> manifests{0}, layers_fetched{0}, cache_hits{0}, disk_hits{0};
  };
  const Counters& counters() const { return counters_; }

  struct TagOutcome;  // what became of one tag in a scrape (defined with Apply)

 private:
  struct CachedImage {
    std::string arch;
    std::optional<ReleaseMetadata> metadata;
  };
  std::optional<CachedImage> LoadFromDisk(const std::string& digest) const;
  void SaveToDisk(const std::string& digest, const CachedImage& image, Diagnostics& diagnostics) const;
  registry::Credentials FindCredentials(const registry::RepositoryLocation& location, Diagnostics& diagnostics) const;
  // The image of `digest` from memory, else from the disk cache (then kept in memory too).
  std::optional<CachedImage> FindCached(const std::string& digest) const;
  // Reads the image and its release metadata from the registry and caches them; nullopt
  // when the tag is skipped or fails (said in `out`).
  std::optional<CachedImage> FetchImage(registry::RegistryClient& client, const registry::Manifest& manifest,
                                        const std::string& tag, TagOutcome& out) const;
  // One tag, from its manifest to its release (or why there is none), into `out`.
  void ReadTag(registry::RegistryClient& client, const registry::RepositoryLocation& location, const std::string& tag,
               TagOutcome& out) const;

  RegistrySourceSettings settings_;
  mutable std::mutex cache_mu_;
  mutable std::map<std::string, CachedImage> cache_;  // by manifest digest
  mutable Counters counters_;
};

// The `release-scrape-dockerv2` plugin table (the reference's settings): registry,
// repository, manifestref_key, fetch_concurrency, username, password, credentials_path,
// root_certificate_dir, cache_directory.
PluginStep RegistryReleaseSourceFromSettings(const PluginSettings& settings);

}  // namespace cincinnati
