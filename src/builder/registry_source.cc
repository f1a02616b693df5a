#include "builder/registry_source.h"

#include <thread>

#include <fmt/format.h>

#include "builder/raw_graph.h"
#include "registry/release_image.h"

namespace cincinnati {

RegistryReleaseSource::RegistryReleaseSource(RegistrySourceSettings settings) : settings_(std::move(settings)) {}

Result<Graph> RegistryReleaseSource::Apply(Graph, TransformContext& context) const {
  CINCINNATI_ASSIGN_OR_RETURN(registry::RepositoryLocation location,
                              registry::ParseRepositoryLocation(settings_.registry, settings_.repository));
  registry::RegistryClient client(location, settings_.credentials, settings_.client);
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<std::string> tags, client.ListTags(settings_.tags_page_size));

  struct Outcome {
    std::optional<Release> release;
    std::string skipped;  // why the tag was skipped, if it was
    Status error;         // fails the scrape
  };
  std::vector<Outcome> outcomes(tags.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < tags.size(); i = next++) {
      const std::string& tag = tags[i];
      Outcome& out = outcomes[i];
      auto image = registry::InspectImage(client, tag);
      counters_.manifests++;
      if (!image.ok()) {
        out.skipped = tag.find(".sig") != std::string::npos ? "" : image.status().message();
        continue;
      }
      CachedImage cached;
      bool hit = false;
      {
        std::lock_guard<std::mutex> lock(cache_mu_);
        if (auto it = cache_.find(image->digest); it != cache_.end()) cached = it->second, hit = true;
      }
      if (hit) {
        counters_.cache_hits++;
      } else {
        auto metadata = registry::ReadReleaseMetadata(client, image->layers_top_first);
        counters_.layers_fetched += image->layers_top_first.size();
        if (!metadata.ok()) {
          out.error = metadata.status().WithContext(fmt::format("tag {}", tag));
          continue;
        }
        cached = CachedImage{image->arch, std::move(metadata).value()};
        std::lock_guard<std::mutex> lock(cache_mu_);
        cache_.emplace(image->digest, cached);
      }
      if (!cached.metadata) {
        out.skipped = fmt::format("image {} has no {}", image->digest, registry::kReleaseMetadataPath);
        continue;
      }
      auto arch_of_release = cached.metadata->metadata.find(std::string(kReleaseArchitectureKey));
      if (arch_of_release != cached.metadata->metadata.end() && arch_of_release->second == "multi" &&
          cached.arch != "multi") {
        out.skipped = "a single-architecture part of a multi-architecture release";
        continue;
      }
      out.release = MakeRelease(*cached.metadata, cached.arch, image->digest,
                                location.PullSpecPrefix() + "@" + image->digest, settings_.manifestref_key);
    }
  };
  std::vector<std::thread> workers;
  size_t n = std::max<size_t>(1, std::min(settings_.fetch_concurrency, tags.size()));
  for (size_t i = 0; i < n; ++i) workers.emplace_back(work);
  for (auto& t : workers) t.join();

  std::vector<Release> releases;
  for (size_t i = 0; i < tags.size(); ++i) {
    Outcome& out = outcomes[i];
    if (!out.error.ok()) return out.error;
    if (out.release) {
      releases.push_back(std::move(*out.release));
    } else if (!out.skipped.empty()) {
      context.diagnostics.Warn(location.PullSpecPrefix() + ":" + tags[i], "skipped: " + out.skipped);
    }
  }
  context.raw_releases = releases.size();
  if (releases.empty()) context.diagnostics.Warn(location.PullSpecPrefix(), "no releases found");
  // Oldest first, as the directory source does: cheaper insertion, readable output.
  std::stable_sort(releases.begin(), releases.end(),
                   [](const Release& a, const Release& b) { return a.version < b.version; });
  return BuildRawGraph(releases, settings_.manifestref_key);
}

}  // namespace cincinnati
