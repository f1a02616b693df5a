// "dkrv2-secondary-metadata-scrape": graph-data shipped as a container image
// (openshift/cincinnati: cincinnati/src/plugins/internal/graph_builder/dkrv2_openshift_secondary_metadata_scraper/).
//
// Each run reads the image's manifest. With `verify_signature`, it looks for
// signature-1 .. signature-9 of the digest in the signature store (an http(s) base URL
// or a local directory, laid out "<base>/sha256=<hex>/signature-<n>"); one must verify
// against the public keys, else the run fails. If the layers are the ones unpacked
// last time, that directory is reused. Otherwise the layers are unpacked lowest first
// with whiteouts, keeping only allow-listed paths, and graph-data.tar.gz of the result
// is written to the output directory (the graph builder serves it at /graph-data).
// The graph passes through unchanged; the run parameters name the directory and the
// tarball for openshift-secondary-metadata-parse and the service.
#pragma once

#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>

#include "core/plugin_settings.h"
#include "core/transform.h"
#include "registry/client.h"
#include "registry/manifest.h"

namespace re2 {
class RE2;
}

namespace cincinnati {

// The files of graph-data a scrape keeps by default (an image's or a git repository's).
inline std::vector<std::string> DefaultGraphDataAllowlist() {
  return {"(^|/)LICENSE$", "(^|/)channels/.+\\.ya+ml$", "(^|/)blocked-edges/.+\\.ya+ml$",
          "(^|/)hotfixes/.+\\.ya+ml$", "(^|/)raw/metadata.json$", "(^|/)version$"};
}

struct GraphDataImageSettings {
  std::string registry;
  std::string repository;
  std::string tag = "latest";
  std::string output_directory;  // required
  std::string graph_data_path = "/";
  std::vector<std::string> output_allowlist = DefaultGraphDataAllowlist();
  registry::Credentials credentials;
  std::string credentials_path;
  registry::ClientOptions client;
  bool verify_signature = false;
  std::string signature_baseurl = "https://mirror.openshift.com/pub/openshift-v4/signatures/openshift/release/";
  std::string public_keys_path;
};

class GraphDataImageSource : public GraphTransform {
 public:
  explicit GraphDataImageSource(GraphDataImageSettings settings) : settings_(std::move(settings)) {}
  std::string_view name() const override { return "dkrv2-secondary-metadata-scrape"; }
  Result<Graph> Apply(Graph graph, TransformContext& context) const override;

 private:
  Status VerifySignature(const std::string& digest, std::stop_token stop) const;

  GraphDataImageSettings settings_;
  mutable std::mutex mu_;
  mutable std::vector<registry::Descriptor> last_layers_;
  mutable std::string last_unpack_, last_directory_, last_tar_;
};

// Whether `path` passes one of the (unanchored RE2) allow-list patterns.
bool AllowListed(const std::vector<std::string>& patterns, const std::string& path);

// An allow-list compiled once, for matching many paths (an image's or a directory's
// files); a pattern RE2 rejects matches nothing, as in AllowListed.
class CompiledAllowlist {
 public:
  explicit CompiledAllowlist(const std::vector<std::string>& patterns);
  ~CompiledAllowlist();
  CompiledAllowlist(const CompiledAllowlist&) = delete;
  CompiledAllowlist& operator=(const CompiledAllowlist&) = delete;
  bool Matches(const std::string& path) const;

 private:
  std::vector<std::unique_ptr<re2::RE2>> patterns_;
};

// Whether the directory at `path` is one graph-data readers look for (channels/,
// blocked-edges/, hotfixes/, raw/, at any depth): such directories travel in images and
// tarballs even when empty, since a missing blocked-edges/ is an error but an empty
// one is not.
bool IsGraphDataDirectory(const std::string& path);

// The `dkrv2-secondary-metadata-scrape` plugin table: registry, repository and tag
// (required), output_directory (required), graph_data_path, output_allowlist, username,
// password, credentials_path, root_certificate_dir, verify_signature, signature_baseurl,
// public_keys_path.
PluginStep GraphDataImageSourceFromSettings(const PluginSettings& settings);

}  // namespace cincinnati
