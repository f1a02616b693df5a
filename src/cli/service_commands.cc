// `cincinnati graph-builder`, `cincinnati policy-engine` and `cincinnati serve`: the
// HTTP services, configured with the reference's command-line flags and TOML settings.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>

#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "builder/pipeline.h"
#include "cli/commands.h"
#include "cli/plugins.h"
#include "cli/service_flags.h"
#include "cli/service_reports.h"
#include "cli/service_signing.h"
#include "env/key_files.h"
#include "env/cpus.h"
#include "cli/settings.h"
#include "core/metadata_keys.h"
#include "env/clock.h"
#include "env/scaled_clock.h"
#include "reports/brake.h"
#include "policy/arch_filter.h"
#include "policy/channel_filter.h"
#include "policy/phased_rollout.h"
#include "registry/reference.h"
#include "policy/channel_target.h"
#include "policy/default_chain.h"
#include "directory/cluster_database.h"
#include "policy/hotfix_filter.h"
#include "directory/remote_cluster_directory.h"
#include "core/strings.h"
#include "env/file_system.h"
#include "graph-data/time_format.h"
#include "graph_builder/graph_builder_service.h"
#include "http_server/http_server.h"
#include "policy_engine/adoption_store.h"
#include "policy_engine/policy_engine_service.h"
#include "service/responses.h"

#ifndef CINCINNATI_GIT_COMMIT
#define CINCINNATI_GIT_COMMIT "unknown"
#endif

namespace cincinnati::cli {
namespace {

using server::GraphBuilderService;
using http_server::HttpServer;
using server::PolicyEngineService;

struct Invocation {
  Role role;
  std::string config;
  int verbosity = 0;
  Settings settings;
};

void SetLogLevel(int verbosity) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("cincinnati"));
  spdlog::set_level(verbosity <= 0   ? spdlog::level::warn
                    : verbosity == 1 ? spdlog::level::info
                    : verbosity == 2 ? spdlog::level::debug
                                     : spdlog::level::trace);
}

Result<std::chrono::milliseconds> Secs(const Settings& s, const std::string& key, uint64_t fallback) {
  CINCINNATI_ASSIGN_OR_RETURN(uint64_t v, s.Unsigned(key, fallback));
  return std::chrono::milliseconds(v * 1000);
}

Result<uint16_t> Port(const Settings& s, const std::string& key, uint16_t fallback) {
  CINCINNATI_ASSIGN_OR_RETURN(uint64_t v, s.Unsigned(key, fallback));
  if (v > 65535) return Status::InvalidArgument(fmt::format("setting '{}': {} is not a port", key, v));
  return static_cast<uint16_t>(v);
}

// Where graph-data is unpacked or tarred when --graph-data-cache is not given: a
// directory of this process, removed when it exits.
const std::string& DefaultScratchDirectory() {
  static const std::string dir = (env::TempDirectory() /
                                  ("cincinnati-graph-data-" + std::to_string(::getpid()))).string();
  static const struct Remover {
    ~Remover() { env::RemoveLeftover(env::DefaultFileSystem(), dir, "the graph-data scratch directory"); }
  } remover;
  return dir;
}

}  // namespace

Status SetGraphDataSources(const Settings& s, LocalBuildOptions& options) {
  options.graph_data = s.String("graph_data", "");
  if (s.Has("graph_data_image")) {
    CINCINNATI_ASSIGN_OR_RETURN(registry::ImageReference ref, registry::ParseImageReference(s.String("graph_data_image", "")));
    GraphDataImageSettings g;
    g.registry = ref.location.insecure ? ref.location.base_url : ref.location.host_port;
    g.repository = ref.location.repository;
    g.tag = ref.reference().empty() ? "latest" : ref.reference();
    g.output_directory = s.String("graph_data_cache", DefaultScratchDirectory());
    g.public_keys_path = s.String("graph_data_public_keys", "");
    g.verify_signature = !g.public_keys_path.empty();
    g.signature_baseurl = s.String("graph_data_signatures", g.signature_baseurl);
    g.client.ca_path = s.String("upstream.registry.root_certificate_dir", "");
    options.graph_data_image = g;
  }
  options.graph_data_tarball_directory = s.String("graph_data_cache", DefaultScratchDirectory());
  if (s.Has("graph_data_git")) {
    GraphDataGitSettings g = ParseGitSpec(s.String("graph_data_git", ""));
    g.output_directory = s.String("graph_data_cache", DefaultScratchDirectory());
    options.graph_data_git = g;
  }
  return Status::OK();
}

namespace {

Result<TransformChain> BuilderChain(const Settings& s) {
  TransformChain chain;
  const auto& tables = s.plugins("plugin_settings");
  if (!tables.empty()) {
    for (const PluginTable& t : tables) {
      CINCINNATI_ASSIGN_OR_RETURN(auto step, MakeTransform(t, PluginRole::kGraphBuilder));
      chain.push_back(std::move(step));
    }
    return chain;
  }
  bool registry = s.Has("upstream.registry.url") || s.Has("upstream.registry.repository");
  if ((!s.Has("releases") && !registry) ||
      (!s.Has("graph_data") && !s.Has("graph_data_image") && !s.Has("graph_data_git"))) {
    return Status::InvalidArgument("give --releases (or --upstream.registry.url) and --graph-data (or "
                                   "--graph-data-image), or [[plugin_settings]] in the config file");
  }
  // Local paths must exist at start-up (a typo would otherwise serve nothing, silently);
  // remote sources may come later.
  for (const char* key : {"releases", "graph_data"}) {
    const std::string path = s.String(key, "");
    if (!path.empty() && !env::DefaultFileSystem().Exists(path)) {
      return Status::InvalidArgument(fmt::format(
          "--{}: {} does not exist{}", key == std::string("releases") ? "releases" : "graph-data", path,
          key == std::string("releases") ? " (or give --upstream.registry.url for a registry)"
                                         : " (or give --graph-data-image or --graph-data-git for a remote source)"));
    }
  }
  LocalBuildOptions options;
  options.releases = s.String("releases", "");
  if (registry && !s.Has("releases")) {
    RegistrySourceSettings r;
    r.registry = s.String("upstream.registry.url", r.registry);
    r.repository = s.String("upstream.registry.repository", r.repository);
    r.manifestref_key = s.String("upstream.registry.manifestref_key", r.manifestref_key);
    CINCINNATI_ASSIGN_OR_RETURN(uint64_t concurrency, s.Unsigned("upstream.registry.fetch_concurrency", 16));
    r.fetch_concurrency = std::max<uint64_t>(1, concurrency);
    r.credentials_path = s.String("upstream.registry.credentials_path", "");
    r.cache_directory = s.String("upstream.registry.cache_directory", "");
    r.client.ca_path = s.String("upstream.registry.root_certificate_dir", "");
    options.registry = r;
  }
  CINCINNATI_RETURN_IF_ERROR(SetGraphDataSources(s, options));
  for (const std::string& name : s.List("disallowed_errors")) {
    CINCINNATI_ASSIGN_OR_RETURN(graphdata::ErrorClass c, graphdata::ParseErrorClass(name));
    options.secondary_metadata.disallowed_errors.insert(c);
  }
  return MakeLocalBuilderChain(options);
}

// When this process started: the default epoch of a scaled clock, read once so that every
// clock built from the settings agrees.
const std::chrono::system_clock::time_point kProcessStart = env::RealClock().Now();

// The service's clock: the system's; frozen at --testing.now; or, with
// --testing.time_scale, simulated time from --testing.now at --testing.epoch.
Result<std::shared_ptr<env::Clock>> ServiceClock(const Settings& s) {
  if (!s.Has("testing.now")) {
    if (s.Has("testing.time_scale")) return Status::InvalidArgument("--testing.time_scale needs --testing.now (where the clock starts)");
    return env::SharedRealClock();
  }
  auto t = graphdata::ParseDateTime(s.String("testing.now", ""));
  if (!t.ok()) return t.status().WithContext("--testing.now");
  const std::chrono::system_clock::time_point start{std::chrono::seconds(*t)};
  if (!s.Has("testing.time_scale")) return std::shared_ptr<env::Clock>(std::make_shared<env::ManualClock>(start));
  char* end = nullptr;
  const std::string scale_text = s.String("testing.time_scale", ""), epoch_text = s.String("testing.epoch", "");
  const double scale = std::strtod(scale_text.c_str(), &end);
  if (scale_text.empty() || *end != '\0' || !(scale > 0)) {
    return Status::InvalidArgument(fmt::format("--testing.time_scale {}: a number greater than 0", scale_text));
  }
  auto epoch = kProcessStart;
  if (!epoch_text.empty()) {
    const double seconds = std::strtod(epoch_text.c_str(), &end);
    if (*end != '\0' || !(seconds > 0)) return Status::InvalidArgument(fmt::format("--testing.epoch {}: Unix seconds", epoch_text));
    epoch = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::duration<double>(seconds)));
  }
  return std::shared_ptr<env::Clock>(std::make_shared<env::ScaledClock>(start, scale, epoch));
}

// The policy chain; a cincinnati-graph-fetch table sets the upstream instead. The
// default is the reference's (channel filter, arch filter) plus phased rollouts, which
// only act on graph-data 2.x graphs, on the engine's clock (options.clock).
Result<TransformChain> PolicyChain(const Settings& s, server::PolicyEngineOptions& options) {
  TransformChain chain;
  const auto& tables = s.plugins("policy");
  const std::shared_ptr<const env::Clock> clock = options.clock;
  if (tables.empty()) {
    std::set<std::string> targets;
    for (const std::string& c : s.List("views.channel_targets")) targets.insert(c);
    return policy::DefaultChain(std::move(targets), clock);
  }
  UpstreamSettings upstream{options.upstream.url, std::nullopt};
  PluginEnvironment environment{clock, &upstream};
  for (const PluginTable& t : tables) {
    CINCINNATI_ASSIGN_OR_RETURN(auto step, MakeTransform(t, PluginRole::kPolicyEngine, environment));
    if (step) chain.push_back(std::move(step));
  }
  options.upstream.url = upstream.url;
  if (upstream.timeout) options.upstream.timeout = *upstream.timeout;
  // Hotfix releases must never leak to other clusters, so a chain that does not name
  // the filter gets it before its first per-cluster step (or at its end).
  bool has_hotfix_filter = false;
  for (const auto& step : chain) has_hotfix_filter |= step->name() == "hotfix-filter";
  if (!has_hotfix_filter) {
    auto at = std::find_if(chain.begin(), chain.end(), [](const auto& step) {
      return step->name() == "channel-target" || step->name() == "phased-rollout";
    });
    chain.insert(at, std::make_unique<policy::HotfixFilter>());
  }
  return chain;
}

// The cluster directory: a SQLite file (the embedded default), a remote lookup
// service, or none (then no cluster sees a hotfix).
Result<std::shared_ptr<directory::ClusterDirectory>> Directory(const Settings& s) {
  bool file = s.Has("cluster_directory.path"), remote = s.Has("cluster_directory.url");
  if (file && remote) return Status::InvalidArgument("give cluster_directory.path or cluster_directory.url, not both");
  if (file) {
    std::string path = s.String("cluster_directory.path", "");
    if (!env::DefaultFileSystem().Exists(path)) {
      spdlog::warn("cluster directory {} does not exist yet; lookups fail (general graph) until it does", path);
    }
    return std::shared_ptr<directory::ClusterDirectory>(std::make_shared<directory::SqliteClusterDirectory>(path));
  }
  if (!remote) return std::shared_ptr<directory::ClusterDirectory>();
  directory::RemoteDirectoryOptions o;
  o.base_url = s.String("cluster_directory.url", "");
  auto millis = [&](const char* key, uint64_t fallback) -> Result<std::chrono::milliseconds> {
    CINCINNATI_ASSIGN_OR_RETURN(uint64_t v, s.Unsigned(key, fallback));
    return std::chrono::milliseconds(v);
  };
  CINCINNATI_ASSIGN_OR_RETURN(o.timeout, millis("cluster_directory.timeout_ms", 500));
  CINCINNATI_ASSIGN_OR_RETURN(o.ttl, Secs(s, "cluster_directory.cache_ttl_secs", 300));
  CINCINNATI_ASSIGN_OR_RETURN(o.negative_ttl, Secs(s, "cluster_directory.negative_ttl_secs", 60));
  CINCINNATI_ASSIGN_OR_RETURN(o.failure_backoff, millis("cluster_directory.failure_backoff_ms", 5000));
  CINCINNATI_ASSIGN_OR_RETURN(uint64_t entries, s.Unsigned("cluster_directory.cache_entries", 100000));
  o.max_entries = entries;
  if (o.timeout.count() == 0) return Status::InvalidArgument("cluster_directory.timeout_ms must be greater than 0");
  return std::shared_ptr<directory::ClusterDirectory>(std::make_shared<directory::RemoteClusterDirectory>(o));
}

// How a policy engine treats an HTTP upstream beyond its URL and timeouts.
Status UpstreamOptions(const Settings& s, server::PolicyEngineOptions& o) {
  CINCINNATI_ASSIGN_OR_RETURN(o.upstream.kind, server::ParseUpstreamKind(s.String("upstream.cincinnati.kind", "auto")));
  CINCINNATI_ASSIGN_OR_RETURN(o.cache.max_stale, Secs(s, "upstream.cincinnati.max_stale_secs", 86400));
  CINCINNATI_ASSIGN_OR_RETURN(uint64_t answers, s.Unsigned("upstream.cincinnati.max_cached_answers", 4096));
  CINCINNATI_ASSIGN_OR_RETURN(uint64_t bytes, s.Unsigned("upstream.cincinnati.max_cached_bytes", 256u << 20));
  CINCINNATI_ASSIGN_OR_RETURN(uint64_t rate, s.Unsigned("upstream.cincinnati.max_fetches_per_sec", 50));
  CINCINNATI_ASSIGN_OR_RETURN(uint64_t body, s.Unsigned("upstream.cincinnati.max_body_bytes", 64u << 20));
  o.upstream.max_body_bytes = body;
  if (answers == 0) return Status::InvalidArgument("upstream.cincinnati.max_cached_answers must be greater than 0");
  o.cache.max_queries = answers;
  o.cache.max_bytes = bytes;
  o.cache.max_fetches_per_second = static_cast<double>(rate);
  // The upstream's signed answers (signing/upstream_trust.h).
  const std::string keys = s.String("upstream.cincinnati.public_keys", "");
  // Required by default with keys: the engine's trust on first use lasts a process's life,
  // so each restart would reopen the window to strip the first answer's signature.
  CINCINNATI_ASSIGN_OR_RETURN(o.upstream.require_signature, s.Bool("upstream.cincinnati.require_signature", !keys.empty()));
  if (!keys.empty()) {
    CINCINNATI_ASSIGN_OR_RETURN(TrustedKeys trusted, env::LoadTrustedKeys(keys));
    if (trusted.size() == 0) return Status::InvalidArgument(fmt::format("upstream.cincinnati.public_keys {}: no *.pem key in it", keys));
    spdlog::info("policy engine: the upstream's answers are checked against {} trusted key(s) in {}", trusted.size(), keys);
    o.upstream.keys = std::move(trusted);
  } else if (o.upstream.require_signature) {
    return Status::InvalidArgument("upstream.cincinnati.require_signature needs upstream.cincinnati.public_keys");
  }
  return Status::OK();
}

Result<http_server::ServerLimits> Limits(const Settings& s) {
  http_server::ServerLimits limits;
  CINCINNATI_ASSIGN_OR_RETURN(uint64_t backlog, s.Unsigned("service.backlog", 1024));
  limits.backlog = static_cast<int>(std::min<uint64_t>(backlog, 65535));
  if (s.Has("service.max_connections")) {
    CINCINNATI_ASSIGN_OR_RETURN(uint64_t per_worker, s.Unsigned("service.max_connections", 0));
    limits.max_connections = std::max<uint64_t>(1, per_worker) * env::UsableCpus();
  }
  CINCINNATI_ASSIGN_OR_RETURN(limits.keep_alive_timeout, Secs(s, "service.keep_alive", 10));
  CINCINNATI_ASSIGN_OR_RETURN(limits.first_request_timeout, Secs(s, "service.client_timeout", 5));
  return limits;
}

// The TOML file over the flags, and logging as they ask.
Status Configure(Invocation& inv) {
  Settings& s = inv.settings;
  if (!inv.config.empty()) {
    std::set<std::string> tables;
    if (inv.role != Role::kPolicyEngine) tables.insert("plugin_settings");
    if (inv.role != Role::kGraphBuilder) tables.insert("policy");
    CINCINNATI_RETURN_IF_ERROR(s.MergeToml(inv.config, KnownKeys(inv.role), tables));
  }
  int verbosity = inv.verbosity;
  if (s.Has("verbosity")) verbosity = static_cast<int>(s.String("verbosity", "").size());
  SetLogLevel(verbosity);
  if (s.Has("service.tracing_endpoint")) spdlog::info("tracing_endpoint is accepted but tracing is not exported");
  return Status::OK();
}

// What the graph builder and the policy engine of one process share: the role, where
// they listen (ports become the bound ones once listening), and what clients must send.
struct Common {
  bool gb = false, serve = false;
  std::string prefix, address, status_address;
  uint16_t port = 0, status_port = 0;
  std::vector<std::string> mandatory;
  std::string signatures_dir;
};

Result<Common> ReadCommon(const Settings& s, Role role) {
  Common c;
  c.gb = role == Role::kGraphBuilder;
  c.serve = role == Role::kServe;
  std::string default_prefix = c.serve ? "/api/upgrades_info" : "";
  c.prefix = server::NormalizePathPrefix(s.String("service.path_prefix", default_prefix));
  c.address = s.String("service.address", "127.0.0.1");
  c.status_address = s.String("status.address", "127.0.0.1");
  CINCINNATI_ASSIGN_OR_RETURN(c.port, Port(s, "service.port", c.gb ? 8080 : 8081));
  CINCINNATI_ASSIGN_OR_RETURN(c.status_port, Port(s, "status.port", c.gb ? 9080 : 9081));
  if (c.address == c.status_address && c.port == c.status_port && c.port != 0) {
    return Status::InvalidArgument(fmt::format("main and status listeners cannot both use {}:{}", c.address, c.port));
  }
  c.mandatory = s.List("service.mandatory_client_parameters");
  c.signatures_dir = s.String("signatures.dir", "");
  if (!c.signatures_dir.empty() && !env::DefaultFileSystem().IsDirectory(c.signatures_dir)) {
    return Status::InvalidArgument(fmt::format("signatures.dir {}: not a directory", c.signatures_dir));
  }
  return c;
}

// The graph builder of graph-builder and serve; `reports` may be null.
Result<std::unique_ptr<GraphBuilderService>> MakeBuilder(const Settings& s, const Common& c, const SigningParts& signing,
                                                         ReportParts* reports, env::Clock* clock) {
  CINCINNATI_ASSIGN_OR_RETURN(TransformChain chain, BuilderChain(s));
  server::GraphBuilderOptions o;
  o.path_prefix = c.prefix;
  // Every prefix the chain's steps write with: their records never enter the graph.
  for (const PluginTable& t : s.plugins("plugin_settings")) {
    if (auto it = t.settings.find("key_prefix"); it != t.settings.end()) o.record_prefixes.push_back(it->second);
  }
  o.mandatory_client_parameters = c.mandatory;
  if (c.gb) o.signatures_dir = c.signatures_dir;
  o.generations = signing.generations;
  o.clock = clock;
  if (c.gb) o.signer = signing.signer;  // serve's graph builder serves no clients: its policy engine signs
  CINCINNATI_ASSIGN_OR_RETURN(o.pause, Secs(s, "service.pause_secs", 300));
  if (o.pause.count() == 0) return Status::InvalidArgument("service.pause_secs must be greater than 0");
  if (s.Has("service.scrape_timeout_secs")) {
    CINCINNATI_ASSIGN_OR_RETURN(o.scrape_timeout, Secs(s, "service.scrape_timeout_secs", 0));
  }
  if (reports && reports->board) {
    o.overlay = [board = reports->board.get()](Graph& graph) { return reports::ApplyBrakes(graph, board->InForce(), kDefaultKeyPrefix); };
  }
  auto builder = std::make_unique<GraphBuilderService>(std::move(chain), o, CINCINNATI_GIT_COMMIT);
  if (reports && reports->board) reports->board->OnChange([b = builder.get()] { b->RequestRepublish(); });
  return builder;
}

// The policy engine of policy-engine and serve; `reports` may be null.
Result<std::unique_ptr<PolicyEngineService>> MakeEngine(const Settings& s, const Common& c, const SigningParts& signing,
                                                        ReportParts* reports, const std::shared_ptr<env::Clock>& clock) {
  server::PolicyEngineOptions o;
  o.path_prefix = c.prefix;
  o.signatures_dir = c.signatures_dir;
  o.mandatory_client_parameters = c.mandatory;
  o.upstream.url = c.serve ? "" : s.String("upstream.cincinnati.url", "http://localhost:8080/graph");
  CINCINNATI_ASSIGN_OR_RETURN(o.cache.ttl, Secs(s, "upstream.cincinnati.cache_ttl_secs", 60));
  CINCINNATI_ASSIGN_OR_RETURN(o.upstream.timeout, Secs(s, "upstream.cincinnati.timeout_secs", 30));
  CINCINNATI_RETURN_IF_ERROR(UpstreamOptions(s, o));
  CINCINNATI_ASSIGN_OR_RETURN(uint64_t view_bytes, s.Unsigned("views.max_cached_bytes", 256u << 20));
  o.cache.max_view_bytes = view_bytes;
  o.clock = clock;  // before the chain: its phased rollouts run on the engine's clock
  CINCINNATI_ASSIGN_OR_RETURN(TransformChain chain, PolicyChain(s, o));
  CINCINNATI_ASSIGN_OR_RETURN(o.directory.client, Directory(s));
  if (s.Has("cluster_directory.log_interval_secs")) {
    CINCINNATI_ASSIGN_OR_RETURN(o.directory.log_interval, Secs(s, "cluster_directory.log_interval_secs", 60));
  }
  if (c.serve) o.upstream.url.clear();
  CINCINNATI_ASSIGN_OR_RETURN(o.web_ui, s.Bool("web.enabled", c.serve));
  if (reports) {
    o.reports = reports->intake;
    if (reports->routes) o.extra_routes = [routes = reports->routes.get()](const http_server::Request& r) { return routes->HandleBrakes(r); };
  }
  // Engines side by side share their adoption samples, so that each counts the whole fleet.
  CINCINNATI_ASSIGN_OR_RETURN(std::string postgres, PostgresUrl(s));
  if (o.reports && !postgres.empty()) {
    server::AdoptionStoreOptions adoption;
    adoption.conninfo = postgres;
    o.adoption_store = std::make_shared<server::AdoptionStore>(std::move(adoption));
  }
  o.signer = signing.signer;
  return std::make_unique<PolicyEngineService>(std::move(chain), o, CINCINNATI_GIT_COMMIT);
}

// graph-builder's three listeners (main, public, status); returns the ports file's text.
Result<std::string> ListenAsBuilder(const Settings& s, HttpServer& http, Common& c, GraphBuilderService* builder,
                                    ReportParts* reports) {
  CINCINNATI_ASSIGN_OR_RETURN(uint16_t public_port_setting, Port(s, "service.public_port", 8090));
  // Asynchronous: a policy engine's batch of reports is answered once it is recorded,
  // on the board's writer thread, while this thread serves graphs.
  CINCINNATI_ASSIGN_OR_RETURN(c.port, http.ListenAsync(c.address, c.port, [=](const http_server::Request& r, auto respond) {
                                if (reports) {
                                  if (reports->routes->HandleBatch(r, respond)) return;
                                  if (auto answer = reports->routes->HandleBrakes(r)) return respond(std::move(*answer));
                                }
                                respond(builder->HandleMain(r));
                              }));
  CINCINNATI_ASSIGN_OR_RETURN(uint16_t public_port,
                              http.Listen(c.address, public_port_setting, [=](const auto& r) { return builder->HandlePublic(r); }));
  CINCINNATI_ASSIGN_OR_RETURN(c.status_port, http.Listen(c.status_address, c.status_port, [=](const http_server::Request& r) {
                                if (reports && r.path == "/metrics") {
                                  builder->UpdateMetrics();
                                  return http_server::Response::Text(
                                      200, http_server::RenderAll({&builder->metrics(), &reports->metrics}),
                                      server::kMetricsContentType);
                                }
                                return builder->HandleStatus(r);
                              }));
  return fmt::format("main={}\npublic={}\nstatus={}\n", c.port, public_port, c.status_port);
}

// The listeners of policy-engine and serve (main, status); `builder` is serve's, else
// null. Returns the ports file's text.
Result<std::string> ListenAsEngine(HttpServer& http, Common& c, PolicyEngineService* engine,
                                   GraphBuilderService* builder, ReportParts* reports) {
  CINCINNATI_ASSIGN_OR_RETURN(c.port, http.ListenAsync(c.address, c.port, [=](const auto& r, auto respond) {
                                engine->HandleMain(r, std::move(respond));
                              }));
  CINCINNATI_ASSIGN_OR_RETURN(c.status_port, http.Listen(c.status_address, c.status_port, [=](const http_server::Request& r) {
                                if ((builder || reports) && r.path == "/metrics") {
                                  engine->UpdateRolloutMetric();
                                  std::vector<const http_server::Registry*> all = {&engine->metrics()};
                                  if (builder) {
                                    builder->UpdateMetrics();
                                    all.insert(all.begin(), &builder->metrics());
                                  }
                                  if (reports) all.push_back(&reports->metrics);
                                  return http_server::Response::Text(200, http_server::RenderAll(all),
                                                                     server::kMetricsContentType);
                                }
                                if (builder && (r.path == "/liveness" || r.path == "/readiness")) {
                                  return builder->HandleStatus(r);
                                }
                                return engine->HandleStatus(r);
                              }));
  return fmt::format("main={}\nstatus={}\n", c.port, c.status_port);
}

// Each new graph of serve's builder goes to its engine, and to the brake board, which
// checks every report against the graph the builder serves.
void ConnectGraphs(GraphBuilderService* builder, PolicyEngineService* engine, ReportParts* reports) {
  if (builder && engine) {
    builder->Subscribe([engine](std::shared_ptr<const server::GraphSnapshot> snapshot) {
      // The builder's document and records name the graph's whole content.
      engine->SetGraph(snapshot->graph, snapshot->generation, 0,
                       snapshot->json->etag() + (snapshot->records ? snapshot->records->etag() : std::string()));
    });
  }
  if (builder && reports && reports->board) {
    builder->Subscribe([board = reports->board.get()](std::shared_ptr<const server::GraphSnapshot> snapshot) {
      board->SetGraph(std::make_shared<const reports::ServedEdges>(snapshot->graph));
    });
  }
}

Status Run(Invocation& inv) {
  Settings& s = inv.settings;
  CINCINNATI_RETURN_IF_ERROR(Configure(inv));
  CINCINNATI_ASSIGN_OR_RETURN(Common c, ReadCommon(s, inv.role));

  // Update reports and brakes: opened first, so that they outlive the services
  // that call into them.
  CINCINNATI_ASSIGN_OR_RETURN(std::shared_ptr<env::Clock> clock, ServiceClock(s));
  CINCINNATI_ASSIGN_OR_RETURN(
      std::unique_ptr<ReportParts> reports,
      SetUpReports(s, inv.role != Role::kPolicyEngine, !c.gb, c.prefix, s.String("upstream.cincinnati.url", "http://localhost:8080/graph"),
                   *clock));
  CINCINNATI_ASSIGN_OR_RETURN(SigningParts signing, SetUpSigning(s, inv.role, *clock));
  std::unique_ptr<GraphBuilderService> builder;
  if (inv.role != Role::kPolicyEngine) {
    CINCINNATI_ASSIGN_OR_RETURN(builder, MakeBuilder(s, c, signing, reports.get(), clock.get()));
  }
  // Before the builder goes, the board stops calling it (reports may still be recorded).
  std::shared_ptr<void> unhook(nullptr, [board = reports && reports->board ? reports->board.get() : nullptr](void*) {
    if (board) board->OnChange(nullptr);
  });
  std::unique_ptr<PolicyEngineService> engine;
  if (!c.gb) {
    CINCINNATI_ASSIGN_OR_RETURN(engine, MakeEngine(s, c, signing, reports.get(), clock));
  }

  if (reports && reports->intake && engine) {
    reports->intake->SetEdgeCheck([e = engine.get()](const UpdateReport& report, std::function<void(Status)> done) {
      e->CheckReportEdge(report, std::move(done));
    });
  }
  CINCINNATI_ASSIGN_OR_RETURN(http_server::ServerLimits limits, Limits(s));
  if (c.gb && reports) limits.max_body_bytes = std::max<size_t>(limits.max_body_bytes, 1 << 20);  // policy engines' batches
  HttpServer http(limits);
  http.CatchSignals();
  std::string ports;
  if (c.gb) {
    CINCINNATI_ASSIGN_OR_RETURN(ports, ListenAsBuilder(s, http, c, builder.get(), reports.get()));
  } else {
    CINCINNATI_ASSIGN_OR_RETURN(ports, ListenAsEngine(http, c, engine.get(), builder.get(), reports.get()));
  }
  if (s.Has("testing.ports_file")) {
    CINCINNATI_RETURN_IF_ERROR(env::WriteFileDurably(s.String("testing.ports_file", ""), ports));
  }

  ConnectGraphs(builder.get(), engine.get(), reports.get());
  if (builder) builder->Start();
  if (engine) engine->StartUpstream();
  http.Start();
  std::string base = fmt::format("http://{}:{}{}", c.address, c.port, c.prefix);
  std::cerr << fmt::format("cincinnati {}: serving {}/graph (status on http://{}:{})\n",
                           c.gb ? "graph-builder" : (c.serve ? "serve" : "policy-engine"), base, c.status_address,
                           c.status_port);
  http.WaitForSignal();
  if (engine) engine->Stop();
  if (builder) builder->Stop();
  return Status::OK();
}

void Register(CLI::App& app, int& exit_code, Role role, const char* name, const char* help) {
  auto inv = std::make_shared<Invocation>();
  inv->role = role;
  CLI::App* cmd = app.add_subcommand(name, help);
  cmd->add_option("-c,--config", inv->config, "TOML configuration file (its settings win over flags)")->type_name("PATH");
  cmd->add_flag("-v", inv->verbosity, "More logging (-v info, -vv debug, -vvv trace)");
  for (const Flag& f : Flags(role)) {
    std::string key = f.key;
    CLI::Option* option = cmd->add_option_function<std::string>(
        f.names, [inv, key](const std::string& v) { inv->settings.Set(key, v); }, f.help);
    option->type_name(FlagType(f.key));
    if (f.key == "disallowed_errors") option->check(ErrorClassList());
    const std::string type = FlagType(f.key);
    // What the service reads as a non-negative integer (testing.epoch is fractional).
    const bool whole = type == "PORT" || type == "MILLISECONDS" || type == "BYTES" || (type == "SECONDS" && f.key != "testing.epoch");
    if (whole) option->check(UnsignedValidator());
    if (std::string d = FlagDefault(role, f.key); !d.empty()) option->default_str(d);
  }
  cmd->callback([inv, &exit_code] {
    Status st = Run(*inv);
    if (!st.ok()) {
      std::cerr << "error: " << st.message() << '\n';
      exit_code = 1;
    }
  });
}

}  // namespace

void RegisterServiceCommands(CLI::App& app, int& exit_code) {
  Register(app, exit_code, Role::kGraphBuilder, "graph-builder",
           "Run the graph builder: refresh the graph periodically and serve it");
  Register(app, exit_code, Role::kPolicyEngine, "policy-engine",
           "Run a policy engine: serve per-client views of an upstream graph builder or policy engine");
  Register(app, exit_code, Role::kServe, "serve",
           "Run graph builder and policy engine in one process (default 127.0.0.1:8081, prefix /api/upgrades_info)");
  RegisterBrakeCommands(app, exit_code);
}

}  // namespace cincinnati::cli
