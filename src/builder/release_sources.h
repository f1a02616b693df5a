// Local release sources for the graph builder (the registry source arrives later
// behind the same GraphTransform interface).
//
// A source is either
//  * a graph JSON file in the graph builder's format (e.g. a saved raw graph), or
//  * a directory of release-metadata documents: every `*.json` file directly inside
//    it, and every `<dir>/<name>/release-manifests/release-metadata` (an unpacked
//    release payload). Documents are read in path order.
// For a document the architecture is its version's build metadata if present
// (`4.13.1+arm64`), else the configured default; the payload is the document's
// optional top-level "payload" key (an extension the reference ignores) or
// `<repository>@sha256:<sha256 of the document>`. The manifest digest is the payload's
// `@sha256:...` part.
// A large directory is read on several threads (at most kMaxReleaseLoaders, no more than
// the CPUs the process may use, each with at least kMinDocumentsPerLoader documents):
// reading 10,000 small files is mostly system calls and hashing, which cores share. The
// result is the same as one thread's: releases in path order, and of several bad
// documents the error of the first in that order.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "builder/raw_graph.h"
#include "core/diagnostics.h"
#include "core/plugin_settings.h"
#include "core/transform.h"

namespace cincinnati {

struct ReleaseDirectoryOptions {
  std::string default_arch = "amd64";
  std::string repository = "localhost/openshift/release";
  std::string manifestref_key = std::string(kManifestRefKey);
};

inline constexpr size_t kMaxReleaseLoaders = 4;
inline constexpr size_t kMinDocumentsPerLoader = 256;
Result<std::vector<Release>> LoadReleaseDirectory(const std::filesystem::path& dir,
                                                  const ReleaseDirectoryOptions& options);

// Loads a graph from a file (graph JSON) or a directory (release documents). Releases
// whose own metadata is unusable are left out and reported in `context`
// (builder/release_check.h).
Result<Graph> LoadReleases(const std::filesystem::path& path, const ReleaseDirectoryOptions& options,
                           TransformContext& context);

// "local-releases": the first step of a local graph-builder chain; ignores its input.
class LocalReleaseSource : public GraphTransform {
 public:
  LocalReleaseSource(std::filesystem::path path, ReleaseDirectoryOptions options = {})
      : path_(std::move(path)), options_(std::move(options)) {}
  std::string_view name() const override { return "local-releases"; }
  Result<Graph> Apply(Graph graph, TransformContext& context) const override;

 private:
  std::filesystem::path path_;
  ReleaseDirectoryOptions options_;
};

// The `local-releases` plugin table: path (required), default_arch, repository,
// manifestref_key.
PluginStep LocalReleaseSourceFromSettings(const PluginSettings& settings);

}  // namespace cincinnati
