#include "builder/release_sources.h"

#include <algorithm>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "builder/release_check.h"
#include "core/graph_json.h"
#include "core/release_metadata.h"
#include "core/sha256.h"
#include "env/cpus.h"
#include "env/file_system.h"
#include "graph-data/file_reader.h"

namespace fs = std::filesystem;

namespace cincinnati {
namespace {

std::string Sha256Digest(std::string_view data) { return "sha256:" + Sha256Hex(data); }

Result<Release> LoadReleaseDocument(const fs::path& path, const ReleaseDirectoryOptions& options,
                                    ReleaseMetadataParser& parser) {
  CINCINNATI_ASSIGN_OR_RETURN(std::string text, graphdata::ReadFileToString(path));
  std::string payload;  // the optional "payload" extension key
  auto doc = parser.Parse(text, &payload);
  if (!doc.ok()) return doc.status().WithContext(path.string());
  std::string arch = doc->version.build().empty() ? options.default_arch : doc->version.BuildString();
  std::string digest;
  if (auto at = payload.rfind("@sha256:"); at != std::string::npos) {
    digest = payload.substr(at + 1);
  } else if (payload.empty()) {
    digest = Sha256Digest(text);
    payload = options.repository + "@" + digest;
  } else {
    digest = Sha256Digest(payload);
  }
  return MakeRelease(std::move(doc).value(), arch, digest, std::move(payload), options.manifestref_key);
}

using DocumentList = std::vector<std::pair<std::string, fs::path>>;

// Documents [begin, end) into `loaded`, stopping at the first that fails: so the first
// error in path order is the one a single thread would have stopped at. Never throws
// (it runs on threads of its own).
void LoadDocuments(const DocumentList& documents, size_t begin, size_t end, const ReleaseDirectoryOptions& options,
                   std::vector<std::optional<Result<Release>>>& loaded) noexcept {
  size_t i = begin;
  try {
    ReleaseMetadataParser parser;  // one parser's buffers for the whole range
    for (; i < end; ++i) {
      loaded[i].emplace(LoadReleaseDocument(documents[i].second, options, parser));
      if (!loaded[i]->ok()) return;
    }
  } catch (const std::exception& e) {  // out of memory, mostly
    if (i < end) loaded[i].emplace(Status::Internal(fmt::format("{}: {}", documents[i].second.string(), e.what())));
  }
}

Result<std::vector<Release>> LoadDocumentsInParallel(const DocumentList& documents, const ReleaseDirectoryOptions& options) {
  const size_t loaders = std::clamp<size_t>(std::min(env::UsableCpus(), documents.size() / kMinDocumentsPerLoader), 1, kMaxReleaseLoaders);
  std::vector<std::optional<Result<Release>>> loaded(documents.size());
  const size_t per_loader = (documents.size() + loaders - 1) / loaders;
  {
    std::vector<std::jthread> others;
    for (size_t k = 1; k < loaders; ++k) {
      const size_t begin = std::min(documents.size(), k * per_loader), end = std::min(documents.size(), begin + per_loader);
      others.emplace_back([&, begin, end] { LoadDocuments(documents, begin, end, options, loaded); });
    }
    LoadDocuments(documents, 0, std::min(documents.size(), per_loader), options, loaded);
  }  // joined
  std::vector<Release> releases;
  releases.reserve(documents.size());
  for (std::optional<Result<Release>>& r : loaded) {
    // An empty slot follows its range's error, which came first.
    if (!r) return Status::Internal("a release document was not loaded");
    if (!r->ok()) return r->status();
    releases.push_back(std::move(*r).value());
  }
  return releases;
}

}  // namespace

Result<std::vector<Release>> LoadReleaseDirectory(const fs::path& dir, const ReleaseDirectoryOptions& options) {
  env::FileSystem& disk = env::DefaultFileSystem();
  // Each document by the name of its entry in `dir`: entries' names are unique, so
  // ordering by them is the order of the whole paths, without comparing paths component
  // by component.
  DocumentList documents;
  auto entries = disk.ListDirectory(dir);
  if (!entries.ok()) return Status::IoError(fmt::format("{}: cannot list directory: {}", dir.string(), entries.status().message()));
  for (const env::DirectoryEntry& entry : *entries) {
    if (entry.type == env::FileType::kRegular && entry.path.extension() == ".json") {
      documents.emplace_back(entry.relative.native(), entry.path);
    } else if (entry.type == env::FileType::kDirectory) {
      fs::path inner = entry.path / "release-manifests" / "release-metadata";
      if (disk.IsRegularFile(inner)) documents.emplace_back(entry.relative.native(), std::move(inner));
    }
  }
  std::sort(documents.begin(), documents.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<Release> releases, LoadDocumentsInParallel(documents, options));
  // Oldest first: most edges then point forward, which keeps insertion cheap and the
  // output order readable. Ties (one version, several arches) keep path order.
  std::stable_sort(releases.begin(), releases.end(),
                   [](const Release& a, const Release& b) { return a.version < b.version; });
  return releases;
}

Result<Graph> LoadReleases(const fs::path& path, const ReleaseDirectoryOptions& options, TransformContext& context) {
  if (env::DefaultFileSystem().IsDirectory(path)) {
    CINCINNATI_ASSIGN_OR_RETURN(std::vector<Release> releases, LoadReleaseDirectory(path, options));
    auto graph = BuildRawGraph(KeepUsableReleases(std::move(releases), context), options.manifestref_key);
    if (!graph.ok()) return graph.status().WithContext(path.string());
    return graph;
  }
  CINCINNATI_ASSIGN_OR_RETURN(std::string text, graphdata::ReadFileToString(path));
  auto graph = ReadGraphJson(text);
  if (!graph.ok()) return graph.status().WithContext(path.string());
  return KeepUsableNodes(std::move(graph).value(), context);
}

Result<Graph> LocalReleaseSource::Apply(Graph, TransformContext& context) const {
  CINCINNATI_ASSIGN_OR_RETURN(Graph graph, LoadReleases(path_, options_, context));
  context.raw_releases = 0;
  for (const Node& n : graph.nodes()) context.raw_releases += n.concrete;
  return graph;
}

PluginStep LocalReleaseSourceFromSettings(const PluginSettings& r) {
  CINCINNATI_RETURN_IF_ERROR(r.CheckKnown({"path", "default_arch", "repository", "manifestref_key"}));
  std::string path = r.Get("path", "");
  if (path.empty()) return Status::InvalidArgument("plugin 'local-releases': 'path' is required");
  ReleaseDirectoryOptions o;
  o.default_arch = r.Get("default_arch", o.default_arch);
  o.repository = r.Get("repository", o.repository);
  o.manifestref_key = r.Get("manifestref_key", o.manifestref_key);
  return std::unique_ptr<GraphTransform>(std::make_unique<LocalReleaseSource>(path, o));
}

}  // namespace cincinnati
