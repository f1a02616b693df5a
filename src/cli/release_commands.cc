// `cincinnati release new`, `mirror`, `info` and `sign`: publish, copy, inspect and sign
// release images.
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include <boost/json.hpp>

#include "cli/commands.h"
#include "env/clock.h"
#include "env/file_system.h"
#include "agent/release_verifier.h"
#include "agent/signature_store.h"
#include "core/json.h"
#include "core/strings.h"
#include "graph-data/file_reader.h"
#include "graph-data/graph_data.h"
#include "registry/credentials.h"
#include "registry/keyring.h"
#include "registry/release_image.h"
#include "registry/signature.h"

namespace cincinnati::cli {
namespace {

namespace fs = std::filesystem;

// How a command reaches a registry: the graph builder's options (user and password, or
// a dockercfg file as its --credentials-file, and extra trusted certificates).
struct RegistryAccess {
  registry::Credentials given;
  std::string credentials_file, ca_dir;

  // --PREFIXusername, --PREFIXpassword, --PREFIXcredentials-file; --root-certificate-dir once.
  void AddTo(CLI::App* cmd, const std::string& prefix = "", const std::string& whose = "Registry") {
    cmd->add_option("--" + prefix + "username", given.username, whose + " user");
    cmd->add_option("--" + prefix + "password", given.password, whose + " password");
    cmd->add_option("--" + prefix + "credentials-file", credentials_file,
                    whose + " credentials: a dockercfg file (config.json), read when no user is given")
        ->type_name("PATH");
  }
  void AddCertificatesTo(CLI::App* cmd) {
    cmd->add_option("--root-certificate-dir", ca_dir, "Extra trusted certificates (*.pem, *.crt)")->type_name("DIR");
  }
  Result<registry::Credentials> For(const registry::RepositoryLocation& location) const {
    if (!given.username.empty() || credentials_file.empty()) return given;
    return registry::LookupDockerCredentials(credentials_file, location);
  }
};

struct NewArgs {
  std::string version, arch = "amd64", to, manifests, payload_manifests, verification_keys;
  RegistryAccess access;
  std::vector<std::string> previous, next, metadata, verification_stores;
  size_t chunk_size = 0;
};

Result<std::vector<Version>> Versions(const std::vector<std::string>& texts, const char* what) {
  std::vector<Version> out;
  for (const std::string& t : texts) {
    auto v = Version::Parse(t);
    if (!v.ok()) return v.status().WithContext(what);
    out.push_back(std::move(v).value());
  }
  return out;
}

// Regular files under `dir`, as layer entries relative to it.
Result<std::vector<registry::LayerEntry>> FilesUnder(const std::string& dir, const char* flag) {
  std::vector<registry::LayerEntry> out;
  auto entries = env::DefaultFileSystem().ListTree(dir);
  if (!entries.ok()) return Status::IoError(fmt::format("{} {}: {}", flag, dir, entries.status().message()));
  for (const env::DirectoryEntry& entry : *entries) {
    if (entry.type != env::FileType::kRegular) continue;
    CINCINNATI_ASSIGN_OR_RETURN(std::string content, graphdata::ReadFileToString(entry.path));
    out.push_back({entry.relative.string(), std::move(content)});
  }
  return out;
}

// The verification ConfigMap, as the CVO reads it: one keyring per key file, the stores.
Result<registry::LayerEntry> VerificationConfigMap(const std::string& keys_dir, const std::vector<std::string>& stores) {
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<registry::LayerEntry> keys, FilesUnder(keys_dir, "--verification-keys"));
  if (keys.empty()) return Status::InvalidArgument(fmt::format("--verification-keys {}: no key file", keys_dir));
  if (stores.empty()) return Status::InvalidArgument("--verification-keys needs at least one --verification-stores URL");
  boost::json::object data;
  for (const auto& key : keys) data["verifier-public-key-" + fs::path(key.path).stem().string()] = key.content;
  for (size_t i = 0; i < stores.size(); ++i) data[fmt::format("store-{}", i + 1)] = stores[i];
  boost::json::object metadata{
      {"name", "release-verification"},
      {"namespace", "openshift-config-managed"},
      {"annotations", boost::json::object{{agent::kVerificationConfigMapAnnotation, ""},
                                          {"include.release.openshift.io/self-managed-high-availability", "true"}}}};
  return registry::LayerEntry{
      "0000_90_cluster-version-operator_02_verification-configmap.json",
      WriteJson(boost::json::object{
          {"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", std::move(metadata)}, {"data", std::move(data)}}) +
          "\n"};
}

Status RunNew(const NewArgs& args) {
  registry::NewRelease release;
  release.arch = args.arch;
  auto version = Version::Parse(args.version);
  if (!version.ok()) return version.status().WithContext("--version");
  release.metadata.version = std::move(version).value();
  CINCINNATI_ASSIGN_OR_RETURN(release.metadata.previous, Versions(args.previous, "--previous"));
  CINCINNATI_ASSIGN_OR_RETURN(release.metadata.next, Versions(args.next, "--next"));
  for (const std::string& kv : args.metadata) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::InvalidArgument(fmt::format("--metadata '{}': expected KEY=VALUE", kv));
    }
    release.metadata.metadata[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  if (!args.manifests.empty()) {
    CINCINNATI_ASSIGN_OR_RETURN(release.manifests, FilesUnder(args.manifests, "--manifests"));
  }
  if (!args.payload_manifests.empty()) {
    CINCINNATI_ASSIGN_OR_RETURN(release.payload_manifests, FilesUnder(args.payload_manifests, "--payload-manifests"));
  }
  if (!args.verification_keys.empty()) {
    CINCINNATI_ASSIGN_OR_RETURN(registry::LayerEntry configmap, VerificationConfigMap(args.verification_keys, args.verification_stores));
    release.manifests.push_back(std::move(configmap));
  } else if (!args.verification_stores.empty()) {
    return Status::InvalidArgument("--verification-stores needs --verification-keys");
  }
  CINCINNATI_ASSIGN_OR_RETURN(registry::ImageReference ref, registry::ParseImageReference(args.to));
  if (ref.tag.empty()) return Status::InvalidArgument(fmt::format("--to '{}': a tag is required", args.to));
  CINCINNATI_ASSIGN_OR_RETURN(registry::Credentials credentials, args.access.For(ref.location));
  registry::RegistryClient client(ref.location, credentials, {.ca_path = args.access.ca_dir});
  CINCINNATI_ASSIGN_OR_RETURN(std::string digest, registry::PushRelease(client, ref.tag, release, args.chunk_size));
  std::cout << ref.location.PullSpecPrefix() << "@" << digest << '\n';
  return Status::OK();
}

Status RunInfo(const std::string& image, const RegistryAccess& access) {
  CINCINNATI_ASSIGN_OR_RETURN(registry::ImageReference ref, registry::ParseImageReference(image));
  if (ref.reference().empty()) return Status::InvalidArgument(fmt::format("'{}': a tag or digest is required", image));
  CINCINNATI_ASSIGN_OR_RETURN(registry::Credentials credentials, access.For(ref.location));
  registry::RegistryClient client(ref.location, credentials, {.ca_path = access.ca_dir});
  CINCINNATI_ASSIGN_OR_RETURN(registry::ReleaseImage release, registry::ReadReleaseImage(client, ref.reference()));
  std::cout << WriteJson(boost::json::object{
                   {"image", ref.location.PullSpecPrefix() + "@" + release.digest},
                   {"digest", release.digest},
                   {"architecture", release.arch},
                   {"metadata", release.metadata ? boost::json::value(registry::ReleaseMetadataObject(*release.metadata))
                                                 : boost::json::value()}})
            << '\n';
  if (!release.metadata) {
    return Status::NotFound(fmt::format("{} has no {}", image, registry::kReleaseMetadataPath));
  }
  return Status::OK();
}

struct MirrorArgs {
  std::string from, to, channel, graph_data;
  RegistryAccess from_access, to_access;  // the certificates are the source's (one option)
};

// Copies every release (or the releases of one channel) by digest.
Status RunMirror(const MirrorArgs& a) {
  CINCINNATI_ASSIGN_OR_RETURN(registry::ImageReference from_ref, registry::ParseImageReference(a.from));
  CINCINNATI_ASSIGN_OR_RETURN(registry::ImageReference to_ref, registry::ParseImageReference(a.to));
  std::vector<Version> members;
  if (!a.channel.empty()) {
    if (a.graph_data.empty()) return Status::InvalidArgument("--channel needs --graph-data");
    Diagnostics ignored;
    CINCINNATI_ASSIGN_OR_RETURN(graphdata::GraphData data, graphdata::LoadGraphData(a.graph_data, {}, ignored));
    bool found = false;
    for (const auto& [path, channel] : data.channels) {
      if (channel.name != a.channel) continue;
      found = true;
      members.insert(members.end(), channel.versions.begin(), channel.versions.end());
    }
    if (!found) return Status::NotFound(fmt::format("channel '{}' is not in {}", a.channel, a.graph_data));
  }
  CINCINNATI_ASSIGN_OR_RETURN(registry::Credentials from_credentials, a.from_access.For(from_ref.location));
  CINCINNATI_ASSIGN_OR_RETURN(registry::Credentials to_credentials, a.to_access.For(to_ref.location));
  registry::RegistryClient from(from_ref.location, from_credentials, {.ca_path = a.from_access.ca_dir});
  registry::RegistryClient to(to_ref.location, to_credentials, {.ca_path = a.from_access.ca_dir});
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<std::string> tags, from.ListTags(100));
  size_t copied = 0, skipped = 0;
  for (const std::string& tag : tags) {
    if (!a.channel.empty()) {
      auto release = registry::ReadReleaseImage(from, tag);
      bool member = false;
      if (release.ok() && release->metadata) {
        for (const Version& v : members) {
          const Version& have = release->metadata->version;
          member |= v == have && (v.build().empty() || v.BuildString() == release->arch);
        }
      }
      if (!member) {
        ++skipped;
        continue;
      }
    }
    CINCINNATI_ASSIGN_OR_RETURN(std::string digest, registry::CopyImage(from, to, tag));
    std::cout << to_ref.location.PullSpecPrefix() << ":" << tag << " " << digest << '\n';
    ++copied;
  }
  std::cerr << fmt::format("mirrored {} of {} tags from {} to {}{}\n", copied, tags.size(),
                           from_ref.location.PullSpecPrefix(), to_ref.location.PullSpecPrefix(),
                           skipped ? fmt::format(" ({} not in channel {})", skipped, a.channel) : "");
  return Status::OK();
}

struct SignArgs {
  std::string image, store, layout = "mirror", gnupg_home, key, creator = "cincinnati";
  RegistryAccess access;
};

// Signs the image's digest and writes the signature under the store directory, at the
// first free index.
Status RunSign(const SignArgs& a) {
  CINCINNATI_ASSIGN_OR_RETURN(registry::ImageReference ref, registry::ParseImageReference(a.image));
  std::string digest = ref.digest;
  if (digest.empty()) {
    if (ref.tag.empty()) return Status::InvalidArgument(fmt::format("'{}': a tag or digest is required", a.image));
    CINCINNATI_ASSIGN_OR_RETURN(registry::Credentials credentials, a.access.For(ref.location));
    registry::RegistryClient client(ref.location, credentials, {.ca_path = a.access.ca_dir});
    CINCINNATI_ASSIGN_OR_RETURN(registry::ReleaseImage release, registry::ReadReleaseImage(client, ref.tag));
    digest = release.digest;
  }
  CINCINNATI_RETURN_IF_ERROR(agent::PinnedDigest("@" + digest).status().WithContext(a.image));
  const std::string reference = ref.location.PullSpecPrefix() + (ref.tag.empty() ? "@" + digest : ":" + ref.tag);
  registry::AtomicSignature content{digest, reference, a.creator, env::UnixSeconds(env::RealClock())};
  CINCINNATI_ASSIGN_OR_RETURN(std::string signature,
                              registry::SignMessage(registry::WriteAtomicSignature(content), a.gnupg_home, a.key));
  // mirror: <store>/sha256=<hex>/signature-N (mirror.openshift.com, file:// stores);
  // graph-data: <store>/sha256/<hex>/signature-N (a graph-data repository's signatures/).
  const size_t colon = digest.find(':');
  const fs::path dir = a.layout == "graph-data" ? fs::path(a.store) / digest.substr(0, colon) / digest.substr(colon + 1)
                                                : fs::path(a.store) / (digest.substr(0, colon) + "=" + digest.substr(colon + 1));
  for (int n = 1; n <= agent::kMaxSignaturesPerStore; ++n) {
    const fs::path path = dir / fmt::format("signature-{}", n);
    if (env::DefaultFileSystem().Exists(path)) continue;
    CINCINNATI_RETURN_IF_ERROR(env::DefaultFileSystem().CreateDirectories(dir));
    CINCINNATI_RETURN_IF_ERROR(env::WriteFileDurably(path, signature, env::DefaultFileSystem(), env::kUserFileMode));
    std::cout << path.string() << '\n';
    return Status::OK();
  }
  return Status::Conflict(fmt::format("{} already holds {} signatures, as many as a store may have", dir.string(),
                                      agent::kMaxSignaturesPerStore));
}

}  // namespace

void RegisterReleaseCommands(CLI::App& app, int& exit_code) {
  CLI::App* release = app.add_subcommand("release", "Publish and inspect release images in a registry");
  release->require_subcommand(1);

  auto args = std::make_shared<NewArgs>();
  CLI::App* create = release->add_subcommand("new", "Build a release image and push it to a registry");
  create->add_option("--version", args->version, "Release version (SemVer)")->required();
  create->add_option("--previous", args->previous, "Versions that may update to this one")->delimiter(',');
  create->add_option("--next", args->next, "Versions this one may update to")->delimiter(',');
  create->add_option("--metadata", args->metadata, "KEY=VALUE metadata (repeatable)");
  create->add_option("--manifests", args->manifests, "Directory of manifests to ship under release-manifests/")
      ->check(CLI::ExistingDirectory);
  create->add_option("--payload-manifests", args->payload_manifests,
                     "Directory of manifests to ship under manifests/ (templated by the agent: {{.ReleaseImage}}, "
                     "{{index .Images \"NAME\"}})")
      ->check(CLI::ExistingDirectory)->type_name("DIR");
  create->add_option("--verification-keys", args->verification_keys,
                     "Directory of OpenPGP public keys: ship a verification ConfigMap (one keyring per file) so that "
                     "agents running this release verify the next one")
      ->check(CLI::ExistingDirectory)->type_name("DIR");
  create->add_option("--verification-stores", args->verification_stores,
                     "Signature store URLs (https, http, file) for the verification ConfigMap")
      ->delimiter(',')->type_name("URL");
  create->add_option("--arch", args->arch, "Architecture (Go name: amd64, arm64, s390x, ppc64le)")->capture_default_str();
  create->add_option("--to", args->to, "Destination, e.g. quay.io/org/release:4.14.1 or http://127.0.0.1:5000/r:1")
      ->required();
  args->access.AddTo(create);
  args->access.AddCertificatesTo(create);
  create->add_option("--chunk-size", args->chunk_size, "Upload blobs in chunks of this many bytes (0: one request)");
  create->callback([args, &exit_code] { Report(RunNew(*args), exit_code); });

  auto mirror = std::make_shared<MirrorArgs>();
  CLI::App* copy = release->add_subcommand(
      "mirror", "Copy every release (or one channel's) to another repository, keeping digests");
  copy->add_option("--from", mirror->from, "Source repository, e.g. quay.io/openshift-release-dev/ocp-release")->required();
  copy->add_option("--to", mirror->to, "Destination repository, e.g. mirror.local:5000/ocp/release")->required();
  copy->add_option("--channel", mirror->channel, "Copy only this channel's releases (needs --graph-data)");
  copy->add_option("--graph-data", mirror->graph_data, "Graph-data directory defining the channel");
  mirror->from_access.AddTo(copy, "from-", "Source registry");
  mirror->to_access.AddTo(copy, "to-", "Destination registry");
  mirror->from_access.AddCertificatesTo(copy);
  copy->callback([mirror, &exit_code] { Report(RunMirror(*mirror), exit_code); });

  auto image = std::make_shared<std::string>();
  auto access = std::make_shared<RegistryAccess>();
  CLI::App* info = release->add_subcommand("info", "Print a release image's digest, architecture and metadata");
  info->add_option("image", *image, "Image, e.g. quay.io/org/release:4.14.1")->required();
  access->AddTo(info);
  access->AddCertificatesTo(info);
  info->callback([image, access, &exit_code] { Report(RunInfo(*image, *access), exit_code); });

  auto sign = std::make_shared<SignArgs>();
  CLI::App* sign_cmd = release->add_subcommand(
      "sign", "Sign a release image's digest (an \"atomic container signature\", GnuPG) into a signature store directory");
  sign_cmd->add_option("image", sign->image, "Image by digest (repo@sha256:...) or by tag (the digest is read from the registry)")
      ->required();
  sign_cmd->add_option("--store", sign->store, "Signature store directory the signature is written into")
      ->required()->type_name("DIR");
  sign_cmd->add_option("--layout", sign->layout, "mirror: <store>/sha256=<hex>/signature-N (serve it as it is, or as "
                                                 "file://); graph-data: <store>/sha256/<hex>/signature-N")
      ->check(CLI::IsMember({"mirror", "graph-data"}))->capture_default_str();
  sign_cmd->add_option("--gnupg-home", sign->gnupg_home, "GnuPG home with the secret key (default: $GNUPGHOME or ~/.gnupg)")
      ->type_name("DIR");
  sign_cmd->add_option("--key", sign->key, "Signing key: fingerprint, key ID or user ID (default: GnuPG's default key)");
  sign_cmd->add_option("--creator", sign->creator, "optional.creator of the signature")->capture_default_str();
  sign->access.AddTo(sign_cmd, "", "Registry (to read a tag's digest)");
  sign->access.AddCertificatesTo(sign_cmd);
  sign_cmd->callback([sign, &exit_code] { Report(RunSign(*sign), exit_code); });
}

}  // namespace cincinnati::cli
