#include "builder/graph_data_tarball.h"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "builder/graph_data_image_source.h"
#include "registry/layer.h"

namespace cincinnati {

Result<std::string> WriteGraphDataTarball(const std::string& data_dir, const std::string& output_directory,
                                          const std::vector<std::string>& allowlist) {
  namespace fs = std::filesystem;
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<registry::LayerEntry> all, registry::DirectoryEntries(data_dir));
  std::vector<registry::LayerEntry> files;
  for (auto& e : all) {
    if (AllowListed(allowlist, e.path)) files.push_back(std::move(e));
  }
  CINCINNATI_ASSIGN_OR_RETURN(registry::Layer tarball, registry::MakeLayer(files));
  fs::path tar = fs::path(output_directory) / "graph-data.tar.gz";
  {
    std::ofstream out(tar.string() + ".tmp", std::ios::binary | std::ios::trunc);
    out << tarball.gzip;
    if (!out.flush()) return Status::IoError(fmt::format("cannot write {}", tar.string()));
  }
  std::error_code ec;
  fs::rename(tar.string() + ".tmp", tar, ec);
  if (ec) return Status::IoError(fmt::format("cannot write {}: {}", tar.string(), ec.message()));
  return tar.string();
}

}  // namespace cincinnati
