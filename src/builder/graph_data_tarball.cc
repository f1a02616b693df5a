#include "builder/graph_data_tarball.h"

#include <filesystem>

#include <fmt/format.h>

#include "builder/graph_data_image_source.h"
#include "core/metadata_keys.h"
#include "core/sha256.h"
#include "env/file_system.h"
#include "registry/layer.h"

namespace cincinnati {

Result<std::vector<registry::LayerEntry>> GraphDataLayerEntries(const std::string& dir,
                                                                const std::vector<std::string>& allowlist) {
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<registry::LayerEntry> all, registry::DirectoryEntries(dir, true));
  const CompiledAllowlist compiled(allowlist);
  std::vector<registry::LayerEntry> kept;
  for (auto& e : all) {
    if (e.directory ? IsGraphDataDirectory(e.path) : compiled.Matches(e.path)) kept.push_back(std::move(e));
  }
  return kept;
}

Result<std::string> WriteGraphDataTarball(const std::string& data_dir, const std::string& output_directory,
                                          const std::vector<std::string>& allowlist) {
  namespace fs = std::filesystem;
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<registry::LayerEntry> files, GraphDataLayerEntries(data_dir, allowlist));
  CINCINNATI_ASSIGN_OR_RETURN(registry::Layer tarball, registry::MakeLayer(files));
  fs::path tar = fs::path(output_directory) / "graph-data.tar.gz";
  // Durable and checked to the end; a failure leaves the last good file (and no partial one).
  if (Status s = env::WriteFileDurably(tar, tarball.gzip); !s.ok()) {
    return Status::IoError(fmt::format("cannot write {}: {}", tar.string(), s.message()));
  }
  return tar.string();
}

Result<Graph> LocalGraphDataSource::Apply(Graph graph, TransformContext& context) const {
  context.parameters[std::string(kSecondaryMetadataDirectoryParam)] = directory_;
  const std::vector<std::string> allowlist = DefaultGraphDataAllowlist();
  // Rewrite the tarball only when the allow-listed content changed.
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<registry::LayerEntry> entries, GraphDataLayerEntries(directory_, allowlist));
  std::string fingerprint;
  for (const auto& e : entries) fingerprint += e.path + (e.directory ? "/\n" : '\0' + Sha256Hex(e.content) + '\n');
  std::string hash = Sha256Hex(fingerprint);
  std::lock_guard<std::mutex> lock(mu_);
  if (hash != last_hash_) {
    const Status made = env::DefaultFileSystem().CreateDirectories(output_directory_);
    Result<std::string> tar = made.ok() ? WriteGraphDataTarball(directory_, output_directory_, allowlist) : Result<std::string>(made);
    if (tar.ok()) {
      last_tar_ = *tar;
      last_hash_ = hash;
    } else {  // the graph can still be built; only the download is stale
      context.diagnostics.Warn(output_directory_, tar.status().message());
    }
  }
  if (!last_tar_.empty()) context.parameters[std::string(kSecondaryMetadataTarParam)] = last_tar_;
  return graph;
}

}  // namespace cincinnati
