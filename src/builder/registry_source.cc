#include "builder/registry_source.h"

#include <algorithm>
#include <filesystem>
#include <thread>

#include <fmt/format.h>
#include <simdjson.h>

#include <boost/json.hpp>

#include "builder/raw_graph.h"
#include "builder/release_check.h"
#include "core/guard.h"
#include "core/json.h"
#include "env/file_system.h"
#include "registry/credentials.h"
#include "registry/release_image.h"

namespace cincinnati {

namespace {

std::string CacheFile(const std::string& dir, const std::string& digest) {
  std::string name = digest;
  std::replace(name.begin(), name.end(), ':', '-');
  return dir + "/" + name + ".json";
}

}  // namespace

RegistryReleaseSource::RegistryReleaseSource(RegistrySourceSettings settings) : settings_(std::move(settings)) {}

std::optional<RegistryReleaseSource::CachedImage> RegistryReleaseSource::LoadFromDisk(const std::string& digest) const {
  if (settings_.cache_directory.empty()) return std::nullopt;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.load(CacheFile(settings_.cache_directory, digest)).get(doc)) return std::nullopt;
  std::string_view arch;
  simdjson::dom::element release;
  if (doc["arch"].get_string().get(arch) || doc["release"].get(release)) return std::nullopt;
  CachedImage image{std::string(arch), std::nullopt};
  if (!release.is_null()) {
    auto parsed = ParseReleaseMetadata(simdjson::to_string(release));
    if (!parsed.ok()) return std::nullopt;  // a damaged entry is simply fetched again
    image.metadata = std::move(parsed).value();
  }
  return image;
}

void RegistryReleaseSource::SaveToDisk(const std::string& digest, const CachedImage& image,
                                       Diagnostics& diagnostics) const {
  if (settings_.cache_directory.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(settings_.cache_directory, ec);
  const std::string entry = WriteJson(boost::json::object{
      {"arch", image.arch},
      {"release", image.metadata ? boost::json::value(registry::ReleaseMetadataObject(*image.metadata)) : boost::json::value()}});
  // A reader sees the old file or the new one; a failure leaves no partial file.
  if (Status s = env::WriteFileDurably(CacheFile(settings_.cache_directory, digest), entry); !s.ok()) {
    diagnostics.Warn(settings_.cache_directory, "cannot write the release cache (" + s.message() + "); continuing without it");
  }
}

Result<Graph> RegistryReleaseSource::Apply(Graph, TransformContext& context) const {
  CINCINNATI_ASSIGN_OR_RETURN(registry::RepositoryLocation location,
                              registry::ParseRepositoryLocation(settings_.registry, settings_.repository));
  registry::Credentials credentials = settings_.credentials;
  if (!settings_.credentials_path.empty()) {
    auto found = registry::LookupDockerCredentials(settings_.credentials_path, location);
    if (found.ok()) {
      credentials = *found;
    } else {  // as the reference: log it and go on anonymously
      context.diagnostics.Warn(settings_.credentials_path, found.status().message() + "; continuing anonymously");
    }
  }
  registry::ClientOptions options = settings_.client;
  options.stop = context.stop;
  registry::RegistryClient client(location, credentials, std::move(options));
  const size_t manifests_before = counters_.manifests, layers_before = counters_.layers_fetched,
               hits_before = counters_.cache_hits, disk_before = counters_.disk_hits;
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<std::string> tags, client.ListTags(settings_.tags_page_size));
  auto report = [&context](std::string_view item, size_t value) {
    if (context.progress) context.progress(item, static_cast<double>(value));
  };
  report("tags_listed", tags.size());
  std::atomic<size_t> done{0};

  struct Outcome {
    std::optional<Release> release;
    std::string skipped;  // why the tag was skipped, if it was
    Status error;         // fails the scrape
    Diagnostics notes;
  };
  std::vector<Outcome> outcomes(tags.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < tags.size() && !context.stop.stop_requested(); i = next++) {
      if (i > 0) {
        report("images_read", done++);
        report("manifests_read", counters_.manifests - manifests_before);
        report("layers_fetched", counters_.layers_fetched - layers_before);
        report("cache_hits", counters_.cache_hits - hits_before);
      }
      const std::string& tag = tags[i];
      Outcome& out = outcomes[i];
      auto manifest = client.GetManifest(tag);
      counters_.manifests++;
      if (!manifest.ok()) {
        out.skipped = tag.find(".sig") != std::string::npos ? "" : manifest.status().message();
        continue;
      }
      const std::string& digest = manifest->digest;
      CachedImage cached;
      bool hit = false;
      {
        std::lock_guard<std::mutex> lock(cache_mu_);
        if (auto it = cache_.find(digest); it != cache_.end()) cached = it->second, hit = true;
      }
      if (!hit) {
        if (auto stored = LoadFromDisk(digest)) {
          cached = std::move(*stored);
          hit = true;
          counters_.disk_hits++;
          std::lock_guard<std::mutex> lock(cache_mu_);
          cache_.emplace(digest, cached);
        }
      }
      if (hit) {
        counters_.cache_hits++;
      } else {
        auto image = registry::InspectManifest(client, *manifest);
        if (!image.ok()) {
          out.skipped = tag.find(".sig") != std::string::npos ? "" : image.status().message();
          continue;
        }
        auto metadata = registry::ReadReleaseMetadata(client, image->layers_top_first);
        counters_.layers_fetched += image->layers_top_first.size();
        if (!metadata.ok()) {
          out.error = metadata.status().WithContext(fmt::format("tag {}", tag));
          continue;
        }
        cached = CachedImage{image->arch, std::move(metadata).value()};
        {
          std::lock_guard<std::mutex> lock(cache_mu_);
          cache_.emplace(digest, cached);
        }
        SaveToDisk(digest, cached, out.notes);
      }
      if (!cached.metadata) {
        out.skipped = fmt::format("image {} has no {}", digest, registry::kReleaseMetadataPath);
        continue;
      }
      auto arch_of_release = cached.metadata->metadata.find(std::string(kReleaseArchitectureKey));
      if (arch_of_release != cached.metadata->metadata.end() && arch_of_release->second == "multi" &&
          cached.arch != "multi") {
        out.skipped = "a single-architecture part of a multi-architecture release";
        continue;
      }
      out.release = MakeRelease(*cached.metadata, cached.arch, digest, location.PullSpecPrefix() + "@" + digest,
                                settings_.manifestref_key);
    }
  };

  std::vector<std::thread> workers;
  std::mutex failure_mu;
  Status failure;  // an exception in a worker: it fails the scrape instead of leaving its thread
  size_t n = std::max<size_t>(1, std::min(settings_.fetch_concurrency, tags.size()));
  for (size_t i = 0; i < n; ++i) {
    workers.emplace_back([&] {
      Status st = Guarded("registry scrape worker", [&] {
        work();
        return Status::OK();
      });
      std::lock_guard<std::mutex> lock(failure_mu);
      if (!st.ok() && failure.ok()) failure = st;
    });
  }
  for (auto& t : workers) t.join();
  if (!failure.ok()) return failure;
  if (context.stop.stop_requested()) {  // what was read is incomplete: tags may look skipped
    return Status::Internal(fmt::format("scrape of {} cancelled after {} of {} tags", location.PullSpecPrefix(),
                                        std::min<size_t>(next, tags.size()), tags.size()));
  }

  std::vector<Release> releases;
  size_t skipped = 0;
  for (size_t i = 0; i < tags.size(); ++i) {
    Outcome& out = outcomes[i];
    if (!out.error.ok()) return out.error;
    for (const auto& d : out.notes.items()) context.diagnostics.Add(d.severity, d.location, d.message);
    if (out.release) {
      releases.push_back(std::move(*out.release));
    } else if (!out.skipped.empty()) {
      context.diagnostics.Warn(location.PullSpecPrefix() + ":" + tags[i], "skipped: " + out.skipped);
      ++skipped;
    }
  }
  report("tags_skipped", skipped);  // e.g. a blob that fails its digest: retried next refresh
  context.raw_releases = releases.size();
  report("images_read", tags.size());
  report("manifests_read", counters_.manifests - manifests_before);
  report("layers_fetched", counters_.layers_fetched - layers_before);
  report("cache_hits", counters_.cache_hits - hits_before);
  context.diagnostics.Info(location.PullSpecPrefix(),
                           fmt::format("scraped {} tags: {} manifests read, {} layers fetched, {} cache hits ({} from disk), "
                                       "{} releases",
                                       tags.size(), counters_.manifests - manifests_before,
                                       counters_.layers_fetched - layers_before, counters_.cache_hits - hits_before,
                                       counters_.disk_hits - disk_before, releases.size()));
  if (releases.empty()) context.diagnostics.Warn(location.PullSpecPrefix(), "no releases found");
  // Oldest first, as the directory source does: cheaper insertion, readable output.
  std::stable_sort(releases.begin(), releases.end(),
                   [](const Release& a, const Release& b) { return a.version < b.version; });
  return BuildRawGraph(KeepUsableReleases(std::move(releases), context), settings_.manifestref_key);
}

}  // namespace cincinnati
