#include "builder/graph_data_image_source.h"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <re2/re2.h>

#include "builder/graph_data_tarball.h"
#include "core/metadata_keys.h"
#include "env/file_system.h"
#include "graph-data/file_reader.h"
#include "http/client.h"
#include "registry/credentials.h"
#include "registry/layer.h"
#include "registry/manifest.h"
#include "registry/release_image.h"
#include "registry/signature.h"

namespace cincinnati {

namespace fs = std::filesystem;

namespace {

// A detached signature is a few KiB.
constexpr size_t kMaxSignatureBytes = size_t{1} << 20;

}  // namespace

bool AllowListed(const std::vector<std::string>& patterns, const std::string& path) {
  return CompiledAllowlist(patterns).Matches(path);
}

CompiledAllowlist::CompiledAllowlist(const std::vector<std::string>& patterns) {
  for (const std::string& p : patterns) {
    auto re = std::make_unique<RE2>(p, RE2::Quiet);
    if (re->ok()) patterns_.push_back(std::move(re));
  }
}

CompiledAllowlist::~CompiledAllowlist() = default;

bool CompiledAllowlist::Matches(const std::string& path) const {
  for (const auto& re : patterns_) {
    if (RE2::PartialMatch(path, *re)) return true;
  }
  return false;
}

bool IsGraphDataDirectory(const std::string& path) {
  std::string_view name = path;
  if (size_t slash = name.rfind('/'); slash != std::string_view::npos) name.remove_prefix(slash + 1);
  return name == "channels" || name == "blocked-edges" || name == "hotfixes" || name == "raw";
}

Status GraphDataImageSource::VerifySignature(const std::string& digest, std::stop_token stop) const {
  if (settings_.public_keys_path.empty()) return Status::InvalidArgument("verify_signature needs public_keys_path");
  std::string last_error = "no signature found";
  // Nine attempts, as the reference (signature-1 .. signature-9).
  for (int i = 1; i <= 9; ++i) {
    std::string where = registry::SignatureLocation(settings_.signature_baseurl, digest, i);
    std::string signature;
    if (where.rfind("http://", 0) == 0 || where.rfind("https://", 0) == 0) {
      http::Result r = http::Request(where, {.timeout = std::chrono::seconds(30), .accept_gzip = false,
                                             .ca_path = settings_.client.ca_path,
                                             .max_body_bytes = kMaxSignatureBytes,
                                             .max_body_name = "the signature limit", .stop = stop});
      if (!r.ok()) continue;
      signature = std::move(r.body);
    } else {
      auto read = graphdata::ReadFileToString(where);
      if (!read.ok()) continue;
      signature = std::move(read).value();
    }
    auto verified = registry::VerifyImageSignature(signature, settings_.public_keys_path, digest);
    if (verified.ok()) return Status::OK();
    last_error = fmt::format("{}: {}", where, verified.status().message());
  }
  return Status::InvalidArgument(fmt::format("graph-data image {} is not signed with a trusted key: {}", digest, last_error));
}

Result<Graph> GraphDataImageSource::Apply(Graph graph, TransformContext& context) const {
  if (settings_.output_directory.empty()) return Status::InvalidArgument("output_directory is required");
  CINCINNATI_ASSIGN_OR_RETURN(registry::RepositoryLocation location,
                              registry::ParseRepositoryLocation(settings_.registry, settings_.repository));
  registry::Credentials credentials = settings_.credentials;
  if (!settings_.credentials_path.empty()) {  // unlike the release scrape, a bad file is fatal here
    CINCINNATI_ASSIGN_OR_RETURN(credentials, registry::LookupDockerCredentials(settings_.credentials_path, location));
  }
  registry::ClientOptions options = settings_.client;
  options.stop = context.stop;
  registry::RegistryClient client(location, credentials, std::move(options));
  CINCINNATI_ASSIGN_OR_RETURN(registry::Manifest manifest, client.GetManifest(settings_.tag));
  if (manifest.media_type != registry::kDockerManifest && manifest.media_type != registry::kOciManifest) {
    return Status::InvalidArgument(fmt::format("graph-data image {}:{} must be a single image manifest, not {}",
                                               location.PullSpecPrefix(), settings_.tag, manifest.media_type));
  }
  if (settings_.verify_signature) CINCINNATI_RETURN_IF_ERROR(VerifySignature(manifest.digest, context.stop));

  CINCINNATI_ASSIGN_OR_RETURN(registry::ImageManifest image, registry::ParseImageManifest(manifest.body));
  if (image.layers_top_first.empty()) return Status::InvalidArgument("manifest has no layers");
  std::vector<registry::Descriptor> layers(image.layers_top_first.rbegin(), image.layers_top_first.rend());
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (layers == last_layers_ && env::DefaultFileSystem().IsDirectory(last_directory_)) {
      context.parameters[std::string(kSecondaryMetadataDirectoryParam)] = last_directory_;
      context.parameters[std::string(kSecondaryMetadataTarParam)] = last_tar_;
      return graph;
    }
  }
  std::string hex = manifest.digest.substr(manifest.digest.find(':') + 1, 12);
  fs::path unpack = fs::path(settings_.output_directory) / ("graph-data-" + hex);
  env::RemoveLeftover(env::DefaultFileSystem(), unpack, "an unpacked graph-data image");
  CINCINNATI_RETURN_IF_ERROR(env::DefaultFileSystem().CreateDirectories(unpack));
  const CompiledAllowlist allowlist(settings_.output_allowlist);
  for (const registry::Descriptor& layer : layers) {  // lowest first
    CINCINNATI_ASSIGN_OR_RETURN(std::string blob, client.GetBlob(layer.digest, layer.size));
    CINCINNATI_RETURN_IF_ERROR(
        registry::ExtractLayer(blob, unpack.string(), [&](const std::string& path, bool directory) {
          return directory ? IsGraphDataDirectory(path) : allowlist.Matches(path);
        }));
  }
  fs::path data = unpack / fs::path(settings_.graph_data_path).relative_path();
  CINCINNATI_ASSIGN_OR_RETURN(std::string tar,
                              WriteGraphDataTarball(data.string(), settings_.output_directory, settings_.output_allowlist));
  context.diagnostics.Info(location.PullSpecPrefix() + ":" + settings_.tag,
                           fmt::format("graph-data {} unpacked", manifest.digest));
  std::string previous;
  {
    std::lock_guard<std::mutex> lock(mu_);
    previous = last_unpack_;
    last_unpack_ = unpack.string();
    last_layers_ = layers;
    last_directory_ = data.string();
    last_tar_ = tar;
  }
  if (!previous.empty() && previous != unpack.string()) env::RemoveLeftover(env::DefaultFileSystem(), previous, "an older graph-data revision");
  context.parameters[std::string(kSecondaryMetadataDirectoryParam)] = data.string();
  context.parameters[std::string(kSecondaryMetadataTarParam)] = tar;
  return graph;
}

PluginStep GraphDataImageSourceFromSettings(const PluginSettings& r) {
  CINCINNATI_RETURN_IF_ERROR(r.CheckKnown({"registry", "repository", "tag", "output_directory", "graph_data_path",
                                           "output_allowlist", "username", "password", "credentials_path",
                                           "root_certificate_dir", "verify_signature", "signature_baseurl",
                                           "public_keys_path"}));
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
  s.output_allowlist = r.List("output_allowlist", s.output_allowlist);
  s.credentials = {r.Get("username", ""), r.Get("password", "")};
  s.credentials_path = r.Get("credentials_path", "");
  s.client.ca_path = r.Get("root_certificate_dir", "");
  CINCINNATI_ASSIGN_OR_RETURN(s.verify_signature, r.Bool("verify_signature", false));
  s.signature_baseurl = r.Get("signature_baseurl", s.signature_baseurl);
  s.public_keys_path = r.Get("public_keys_path", "");
  return std::unique_ptr<GraphTransform>(std::make_unique<GraphDataImageSource>(s));
}

}  // namespace cincinnati
