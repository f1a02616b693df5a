#include "cli/service_flags.h"

#include <iterator>
#include <map>

#include "cli/commands.h"
#include "cli/service_reports.h"

namespace cincinnati::cli {

namespace {

// Every service's: its listeners, and what tests set.
std::vector<Flag> CommonFlags() {
  return {
    {"--service.address", "service.address", "Address of the main listener"},
    {"--service.port", "service.port", "Port of the main listener"},
    {"--service.path_prefix", "service.path_prefix", "Path prefix of the API routes (e.g. /api/upgrades_info)"},
    {"--service.mandatory_client_parameters", "service.mandatory_client_parameters",
     "Comma-separated query parameters every graph request must carry"},
    {"--service.tracing_endpoint", "service.tracing_endpoint", "Accepted for compatibility; tracing is not exported"},
    {"--status.address", "status.address", "Address of the status listener"},
    {"--status.port", "status.port", "Port of the status listener"},
    {"--testing.ports_file", "testing.ports_file", "Write the bound ports to this file (for tests)"},
    {"--testing.now", "testing.now",
     "Start the service's clock (phased rollouts, reports, brakes) at this RFC 3339 time; frozen there unless "
     "--testing.time_scale is given"},
    {"--testing.time_scale", "testing.time_scale",
     "With --testing.now: simulated seconds per real second (a fleet simulation's clock)"},
    {"--testing.epoch", "testing.epoch",
     "With --testing.time_scale: the real Unix time (seconds, may be fractional) at which the clock reads "
     "--testing.now (default: when the process started)"},
  };
}

// The cluster directory of a policy engine (embedded or remote).
std::vector<Flag> DirectoryFlags() {
  return {
    {"--cluster_directory.path", "cluster_directory.path",
     "Embedded cluster directory: SQLite file managed with `cincinnati clusters`"},
    {"--cluster_directory.url", "cluster_directory.url", "Remote cluster directory: GET <url>/clusters/<id>"},
    {"--cluster_directory.timeout_ms", "cluster_directory.timeout_ms", "Milliseconds a remote lookup may take (500)"},
    {"--cluster_directory.cache_ttl_secs", "cluster_directory.cache_ttl_secs", "Seconds a found cluster is cached (300)"},
    {"--cluster_directory.negative_ttl_secs", "cluster_directory.negative_ttl_secs",
     "Seconds an unknown cluster is cached (60)"},
    {"--cluster_directory.cache_entries", "cluster_directory.cache_entries", "Most cached lookups (100000)"},
    {"--cluster_directory.failure_backoff_ms", "cluster_directory.failure_backoff_ms",
     "After a failed lookup, milliseconds during which uncached ids get the general graph at once (5000)"},
    {"--cluster_directory.log_interval_secs", "cluster_directory.log_interval_secs",
     "Seconds between two log lines about failing lookups (60)"},
  };
}

// Where a graph builder reads releases and graph-data, and how often.
std::vector<Flag> BuilderFlags() {
  return {
    {"--releases", "releases", "Graph JSON file, or directory of release-metadata documents"},
    {"--graph-data", "graph_data", "Graph-data directory"},
    {"--graph-data-image", "graph_data_image", "Graph-data container image (REGISTRY/REPO:TAG) instead of a directory"},
    {"--graph-data-git", "graph_data_git", "Graph-data git repository URL[#BRANCH|#COMMIT] instead of a directory"},
    {"--graph-data-public-keys", "graph_data_public_keys", "Verify the graph-data image's signature with these keys"},
    {"--graph-data-signatures", "graph_data_signatures", "Signature store (URL or directory) for the graph-data image"},
    {"--signatures.dir", "signatures.dir",
     "Serve this directory's release signatures at {prefix}/signatures/ALGO=DIGEST/signature-N, read from "
     "ALGO/DIGEST/signature-N (a graph-data repository's signatures/; the metadata-helper's role)"},
    {"--graph-data-cache", "graph_data_cache", "Where the graph-data image is unpacked (default: a temporary directory)"},
    {"--disallowed-errors", "disallowed_errors", kDisallowedErrorsHelp},
    {"--service.pause_secs", "service.pause_secs", "Seconds between the end of a refresh and the next"},
    {"--service.scrape_timeout", "service.scrape_timeout_secs", "Seconds a refresh may take"},
    {"--upstream.registry.url,--registry", "upstream.registry.url",
     "Registry to scrape releases from (e.g. quay.io, http://127.0.0.1:5000)"},
    {"--upstream.registry.repository,--repository", "upstream.registry.repository", "Repository of the releases"},
    {"--upstream.registry.credentials_path,--credentials-file,--credentials-path", "upstream.registry.credentials_path",
     "dockercfg credentials file (config.json)"},
    {"--upstream.registry.cache_directory", "upstream.registry.cache_directory",
     "Keep scraped release metadata here across restarts"},
    {"--upstream.registry.root_certificate_dir", "upstream.registry.root_certificate_dir",
     "Extra trusted certificates (*.pem, *.crt)"},
    {"--upstream.registry.manifestref_key", "upstream.registry.manifestref_key", "Metadata key for the manifest digest"},
    {"--upstream.registry.fetch_concurrency", "upstream.registry.fetch_concurrency", "Images read in parallel"},
  };
}

// How a policy engine's main listener takes connections.
std::vector<Flag> ConnectionFlags() {
  return {
    {"--service.backlog", "service.backlog", "Listen backlog"},
    {"--service.max_connections", "service.max_connections", "Most open connections per worker thread"},
    {"--service.max_connection_rate", "service.max_connection_rate", "Accepted for compatibility"},
    {"--service.keep_alive", "service.keep_alive", "Seconds an idle connection is kept (0: off)"},
    {"--service.client_timeout", "service.client_timeout", "Seconds allowed for the first request"},
  };
}

// A policy engine's upstream: where, how long its answers are reused, and their trust.
std::vector<Flag> UpstreamFlags() {
  return {
    {"--upstream.cincinnati.url", "upstream.cincinnati.url", "Graph builder or policy engine URL"},
    {"--upstream.cincinnati.cache_ttl_secs", "upstream.cincinnati.cache_ttl_secs",
     "Seconds an upstream graph is reused (default 60)"},
    {"--upstream.cincinnati.timeout_secs", "upstream.cincinnati.timeout_secs",
     "Seconds an upstream fetch may take (default 30)"},
    {"--upstream.cincinnati.kind", "upstream.cincinnati.kind",
     "What the upstream is: auto (detected, the default), graph-builder or policy-engine"},
    {"--upstream.cincinnati.max_stale_secs", "upstream.cincinnati.max_stale_secs",
     "Seconds a forwarded answer is still served while its refresh fails (default 86400)"},
    {"--upstream.cincinnati.max_cached_answers", "upstream.cincinnati.max_cached_answers",
     "Most forwarded queries kept (default 4096)"},
    {"--upstream.cincinnati.max_cached_bytes", "upstream.cincinnati.max_cached_bytes",
     "Most bytes of forwarded answers kept (default 268435456)"},
    {"--upstream.cincinnati.max_fetches_per_sec", "upstream.cincinnati.max_fetches_per_sec",
     "Most forwarded queries fetched upstream per second, 0 for no limit (default 50)"},
    {"--upstream.cincinnati.max_body_bytes", "upstream.cincinnati.max_body_bytes",
     "Largest upstream answer accepted, in bytes (default 67108864)"},
    {"--upstream.cincinnati.public_keys", "upstream.cincinnati.public_keys",
     "Directory of Ed25519 public keys (*.pem): the upstream's answers must be signed by one of them, unexpired (a refused "
     "answer is a failed fetch; the last good graph is served)"},
    {"--upstream.cincinnati.require_signature", "upstream.cincinnati.require_signature",
     "With upstream.cincinnati.public_keys: refuse unsigned upstream answers (default true with keys; false takes them "
     "until the upstream has signed one)"},
  };
}

void Append(std::vector<Flag>& flags, std::vector<Flag> more) {
  flags.insert(flags.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
}

}  // namespace

std::vector<Flag> Flags(Role role) {
  std::vector<Flag> flags = CommonFlags();
  if (role != Role::kGraphBuilder) {
    flags.push_back({"--views.channel_targets", "views.channel_targets",
                     "Channels (comma list, or *) whose clients get only the paths from their version to the target"});
    flags.push_back({"--views.max_cached_bytes", "views.max_cached_bytes",
                     "Most bytes of views computed on demand (channel-target, hotfix-entitled) kept, by estimate; "
                     "views asked least recently go first (default 268435456)"});
    flags.push_back({"--web.enabled", "web.enabled",
                     "Serve the graph page at / (true or false; default true for serve, false for policy-engine)"});
    Append(flags, DirectoryFlags());
  }
  if (role != Role::kPolicyEngine) Append(flags, BuilderFlags());
  if (role == Role::kGraphBuilder) {
    flags.push_back({"--service.public_port", "service.public_port", "Port of the public listener (graph-data)"});
    flags[0].names += ",--address";
    flags[1].names += ",--port";
  }
  if (role != Role::kGraphBuilder) Append(flags, ConnectionFlags());
  if (role == Role::kPolicyEngine) Append(flags, UpstreamFlags());
  // Signed answers.
  flags.push_back({"--signing.keys", "signing.keys",
                   "Ed25519 private keys (PEM files, comma-separated; two during a key rotation) that sign every graph answer"});
  flags.push_back({"--signing.validity_secs", "signing.validity_secs",
                   "Seconds a signed answer stays valid after the graph builder last refreshed it (default 3600)"});
  if (role != Role::kPolicyEngine) {
    flags.push_back({"--signing.state_dir", "signing.state_dir",
                     "Where the graph generation is kept, so that it never goes back (needed with signing.keys)"});
  }
  for (ReportFlag& f : ReportFlags(role != Role::kPolicyEngine, role != Role::kGraphBuilder)) {
    flags.push_back({std::move(f.names), std::move(f.key), std::move(f.help)});
  }
  return flags;
}

// What --help shows as a flag's type, from its settings key.
std::string FlagType(const std::string& key) {
  auto ends = [&](std::string_view s) { return key.ends_with(s); };
  if (ends("port")) return "PORT";
  if (ends("_ms")) return "MILLISECONDS";
  if (ends("_secs") || ends("keep_alive") || ends("client_timeout")) return "SECONDS";
  if (key == "signing.keys") return "PATHS";
  if (key == "signing.state_dir" || key == "upstream.cincinnati.public_keys") return "DIR";
  if (key == "upstream.cincinnati.require_signature") return "BOOL";
  if (ends("bytes")) return "BYTES";
  if (ends("address")) return "ADDRESS";
  if (ends(".url") || key == "graph_data_git") return "URL";
  if (ends("enabled")) return "BOOL";
  if (key == "graph_data_image") return "IMAGE";
  if (key == "testing.now") return "TIME";
  if (key == "testing.time_scale") return "FACTOR";
  if (key == "testing.epoch") return "SECONDS";
  if (key == "releases" || key == "graph_data" || ends("_path") || ends("_dir") || ends("directory") || ends(".dir") ||
      ends("ports_file") || key == "graph_data_cache" || key == "graph_data_public_keys") {
    return "PATH";
  }
  if (ends("_file")) return "PATH";
  if (ends("backlog") || ends("connections") || ends("concurrency") || ends("entries") || ends("answers") ||
      ends("per_sec") || ends("rate") || ends("per_day") || ends("min_polls") || ends("sightings") || ends("min_clusters") || ends("threshold") ||
      ends("confidence") || ends("prior_mean") || ends("prior_strength")) {
    return "NUMBER";
  }
  if (key == "disallowed_errors" || key == "views.channel_targets" || key == "service.mandatory_client_parameters") {
    return "LIST";
  }
  return "TEXT";
}

// What --help shows as a flag's default, for the service `role` (empty: none).
std::string FlagDefault(Role role, const std::string& key) {
  const bool gb = role == Role::kGraphBuilder;
  static const std::map<std::string, std::string> kCommon = {
      {"service.address", "127.0.0.1"}, {"status.address", "127.0.0.1"}, {"service.pause_secs", "300"},
      {"service.public_port", "8090"}, {"service.backlog", "1024"}, {"service.max_connections", "0 (no limit)"},
      {"service.keep_alive", "10"}, {"service.client_timeout", "5"}, {"upstream.registry.fetch_concurrency", "16"},
      {"upstream.cincinnati.url", "http://localhost:8080/graph"}, {"upstream.cincinnati.kind", "auto"},
      {"upstream.cincinnati.cache_ttl_secs", "60"}, {"upstream.cincinnati.timeout_secs", "30"},
      {"upstream.cincinnati.max_stale_secs", "86400"}, {"upstream.cincinnati.max_cached_answers", "4096"},
      {"upstream.cincinnati.max_cached_bytes", "268435456"}, {"upstream.cincinnati.max_fetches_per_sec", "50"},
      {"views.max_cached_bytes", "268435456"},
      {"upstream.cincinnati.max_body_bytes", "67108864"}, {"upstream.cincinnati.require_signature", "true with public_keys"}, {"cluster_directory.timeout_ms", "500"},
      {"cluster_directory.cache_ttl_secs", "300"}, {"cluster_directory.negative_ttl_secs", "60"},
      {"cluster_directory.cache_entries", "100000"}, {"cluster_directory.failure_backoff_ms", "5000"},
      {"cluster_directory.log_interval_secs", "60"},
      {"graph_data_cache", "a temporary directory"}};
  if (key == "service.port") return gb ? "8080" : "8081";
  if (key == "status.port") return gb ? "9080" : "9081";
  if (key == "service.path_prefix") return role == Role::kServe ? "/api/upgrades_info" : "";
  if (key == "web.enabled") return role == Role::kServe ? "true" : "false";
  auto it = kCommon.find(key);
  return it == kCommon.end() ? "" : it->second;
}

std::set<std::string> KnownKeys(Role role) {
  std::set<std::string> keys = {"verbosity"};
  for (const Flag& f : Flags(role)) keys.insert(f.key);
  keys.erase("releases");
  keys.erase("graph_data");
  keys.erase("disallowed_errors");
  for (const char* k : {"graph_data_image", "graph_data_git", "graph_data_public_keys", "graph_data_signatures",
                        "graph_data_cache"}) {
    keys.erase(k);
  }
  keys.erase("testing.ports_file");
  keys.erase("testing.now");
  keys.erase("testing.time_scale");
  keys.erase("testing.epoch");
  return keys;
}


}  // namespace cincinnati::cli
