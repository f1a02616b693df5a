#include "builder/registry_source.h"

#include <algorithm>
#include <filesystem>
#include <functional>
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
  if (Status made = env::DefaultFileSystem().CreateDirectories(settings_.cache_directory); !made.ok()) {
    diagnostics.Warn(settings_.cache_directory, "cannot keep the release cache (" + made.message() + "); continuing without it");
    return;
  }
  const std::string entry = WriteJson(boost::json::object{
      {"arch", image.arch},
      {"release", image.metadata ? boost::json::value(registry::ReleaseMetadataObject(*image.metadata)) : boost::json::value()}});
  // A reader sees the old file or the new one; a failure leaves no partial file.
  if (Status s = env::WriteFileDurably(CacheFile(settings_.cache_directory, digest), entry); !s.ok()) {
    diagnostics.Warn(settings_.cache_directory, "cannot write the release cache (" + s.message() + "); continuing without it");
  }
}

// What became of one tag: a release, a reason to skip it, or an error that fails the scrape.
struct RegistryReleaseSource::TagOutcome {
  std::optional<Release> release;
  std::string skipped;  // why the tag was skipped, if it was
  Status error;         // fails the scrape
  Diagnostics notes;
};

namespace {

// A scrape's progress as the context's progress items: what the source's counters gained
// since the scrape began.
class ScrapeProgress {
 public:
  ScrapeProgress(const RegistryReleaseSource::Counters& counters, const TransformContext& context)
      : counters_(counters),
        context_(context),
        manifests_(counters.manifests),
        layers_(counters.layers_fetched),
        hits_(counters.cache_hits),
        disk_(counters.disk_hits) {}

  void Report(std::string_view item, size_t value) const {
    if (context_.progress) context_.progress(item, static_cast<double>(value));
  }
  // `images` read so far, and the reads they took.
  void ReportImages(size_t images) const {
    Report("images_read", images);
    Report("manifests_read", manifests());
    Report("layers_fetched", layers());
    Report("cache_hits", hits());
  }
  size_t manifests() const { return counters_.manifests - manifests_; }
  size_t layers() const { return counters_.layers_fetched - layers_; }
  size_t hits() const { return counters_.cache_hits - hits_; }
  size_t disk_hits() const { return counters_.disk_hits - disk_; }

 private:
  const RegistryReleaseSource::Counters& counters_;
  const TransformContext& context_;
  const size_t manifests_, layers_, hits_, disk_;
};

// Runs `work` on `n` threads and joins them; an exception in one fails the whole instead
// of leaving its thread.
Status RunWorkers(size_t n, const std::function<void()>& work) {
  std::vector<std::thread> workers;
  std::mutex failure_mu;
  Status failure;
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
  return failure;
}

// Why a tag is skipped when its manifest or image cannot be read: nothing for a ".sig"
// tag (a signature, not a release).
std::string SkipReason(const std::string& tag, const Status& status) {
  return tag.find(".sig") != std::string::npos ? "" : status.message();
}

}  // namespace

// As the reference: credentials that cannot be found are logged and the scrape goes on
// anonymously.
registry::Credentials RegistryReleaseSource::FindCredentials(const registry::RepositoryLocation& location,
                                                             Diagnostics& diagnostics) const {
  if (settings_.credentials_path.empty()) return settings_.credentials;
  auto found = registry::LookupDockerCredentials(settings_.credentials_path, location);
  if (found.ok()) return *found;
  diagnostics.Warn(settings_.credentials_path, found.status().message() + "; continuing anonymously");
  return settings_.credentials;
}

std::optional<RegistryReleaseSource::CachedImage> RegistryReleaseSource::FindCached(const std::string& digest) const {
  {
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (auto it = cache_.find(digest); it != cache_.end()) return it->second;
  }
  auto stored = LoadFromDisk(digest);
  if (stored) {
    counters_.disk_hits++;
    std::lock_guard<std::mutex> lock(cache_mu_);
    cache_.emplace(digest, *stored);
  }
  return stored;
}

std::optional<RegistryReleaseSource::CachedImage> RegistryReleaseSource::FetchImage(registry::RegistryClient& client,
                                                                                    const registry::Manifest& manifest,
                                                                                    const std::string& tag,
                                                                                    TagOutcome& out) const {
  auto image = registry::InspectManifest(client, manifest);
  if (!image.ok()) {
    out.skipped = SkipReason(tag, image.status());
    return std::nullopt;
  }
  auto metadata = registry::ReadReleaseMetadata(client, image->layers_top_first);
  counters_.layers_fetched += image->layers_top_first.size();
  if (!metadata.ok()) {
    out.error = metadata.status().WithContext(fmt::format("tag {}", tag));
    return std::nullopt;
  }
  CachedImage cached{image->arch, std::move(metadata).value()};
  {
    std::lock_guard<std::mutex> lock(cache_mu_);
    cache_.emplace(manifest.digest, cached);
  }
  SaveToDisk(manifest.digest, cached, out.notes);
  return cached;
}

void RegistryReleaseSource::ReadTag(registry::RegistryClient& client, const registry::RepositoryLocation& location,
                                    const std::string& tag, TagOutcome& out) const {
  auto manifest = client.GetManifest(tag);
  counters_.manifests++;
  if (!manifest.ok()) {
    out.skipped = SkipReason(tag, manifest.status());
    return;
  }
  const std::string& digest = manifest->digest;
  std::optional<CachedImage> cached = FindCached(digest);
  if (cached) {
    counters_.cache_hits++;
  } else {
    cached = FetchImage(client, *manifest, tag, out);
    if (!cached) return;
  }
  if (!cached->metadata) {
    out.skipped = fmt::format("image {} has no {}", digest, registry::kReleaseMetadataPath);
    return;
  }
  auto arch_of_release = cached->metadata->metadata.find(std::string(kReleaseArchitectureKey));
  if (arch_of_release != cached->metadata->metadata.end() && arch_of_release->second == "multi" &&
      cached->arch != "multi") {
    out.skipped = "a single-architecture part of a multi-architecture release";
    return;
  }
  out.release = MakeRelease(*cached->metadata, cached->arch, digest, location.PullSpecPrefix() + "@" + digest,
                            settings_.manifestref_key);
}

namespace {

// The releases of the tags in their order; the first error fails the scrape. Skipped tags
// become warnings, counted in `skipped`.
Result<std::vector<Release>> CollectReleases(std::vector<RegistryReleaseSource::TagOutcome>& outcomes,
                                             const std::vector<std::string>& tags, const std::string& prefix,
                                             Diagnostics& diagnostics, size_t& skipped) {
  std::vector<Release> releases;
  for (size_t i = 0; i < tags.size(); ++i) {
    RegistryReleaseSource::TagOutcome& out = outcomes[i];
    if (!out.error.ok()) return out.error;
    for (const auto& d : out.notes.items()) diagnostics.Add(d.severity, d.location, d.message);
    if (out.release) {
      releases.push_back(std::move(*out.release));
    } else if (!out.skipped.empty()) {
      diagnostics.Warn(prefix + ":" + tags[i], "skipped: " + out.skipped);
      ++skipped;
    }
  }
  return releases;
}

}  // namespace

Result<Graph> RegistryReleaseSource::Apply(Graph, TransformContext& context) const {
  CINCINNATI_ASSIGN_OR_RETURN(registry::RepositoryLocation location,
                              registry::ParseRepositoryLocation(settings_.registry, settings_.repository));
  registry::ClientOptions options = settings_.client;
  options.stop = context.stop;
  registry::RegistryClient client(location, FindCredentials(location, context.diagnostics), std::move(options));
  const ScrapeProgress progress(counters_, context);
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<std::string> tags, client.ListTags(settings_.tags_page_size));
  progress.Report("tags_listed", tags.size());

  std::vector<TagOutcome> outcomes(tags.size());
  std::atomic<size_t> next{0}, done{0};
  auto work = [&] {
    for (size_t i = next++; i < tags.size() && !context.stop.stop_requested(); i = next++) {
      if (i > 0) progress.ReportImages(done++);
      ReadTag(client, location, tags[i], outcomes[i]);
    }
  };
  CINCINNATI_RETURN_IF_ERROR(RunWorkers(std::max<size_t>(1, std::min(settings_.fetch_concurrency, tags.size())), work));
  if (context.stop.stop_requested()) {  // what was read is incomplete: tags may look skipped
    return Status::Internal(fmt::format("scrape of {} cancelled after {} of {} tags", location.PullSpecPrefix(),
                                        std::min<size_t>(next, tags.size()), tags.size()));
  }

  size_t skipped = 0;
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<Release> releases,
                              CollectReleases(outcomes, tags, location.PullSpecPrefix(), context.diagnostics, skipped));
  progress.Report("tags_skipped", skipped);  // e.g. a blob that fails its digest: retried next refresh
  context.raw_releases = releases.size();
  progress.ReportImages(tags.size());
  context.diagnostics.Info(location.PullSpecPrefix(),
                           fmt::format("scraped {} tags: {} manifests read, {} layers fetched, {} cache hits ({} from disk), "
                                       "{} releases",
                                       tags.size(), progress.manifests(), progress.layers(), progress.hits(),
                                       progress.disk_hits(), releases.size()));
  if (releases.empty()) context.diagnostics.Warn(location.PullSpecPrefix(), "no releases found");
  // Oldest first, as the directory source does: cheaper insertion, readable output.
  std::stable_sort(releases.begin(), releases.end(),
                   [](const Release& a, const Release& b) { return a.version < b.version; });
  return BuildRawGraph(KeepUsableReleases(std::move(releases), context), settings_.manifestref_key);
}

PluginStep RegistryReleaseSourceFromSettings(const PluginSettings& r) {
  CINCINNATI_RETURN_IF_ERROR(r.CheckKnown({"registry", "repository", "manifestref_key", "fetch_concurrency", "username",
                                           "password", "credentials_path", "root_certificate_dir", "cache_directory"}));
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

}  // namespace cincinnati
