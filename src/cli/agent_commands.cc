// `cincinnati agent`: one cluster's update agent (the cluster-version operator's role)
// with its API on 127.0.0.1.
#include <fmt/format.h>
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <mutex>
#include <optional>
#include <iostream>
#include <thread>

#include "agent/agent.h"
#include "agent/agent_api.h"
#include "agent/hand_over.h"
#include "agent/release_verifier.h"
#include "commands.h"
#include "core/strings.h"
#include "env/file_system.h"
#include "env/key_files.h"
#include "env/process.h"
#include "kube/api_access.h"
#include "kube/status_document.h"
#include "http_server/http_server.h"
#include "http_server/listening_socket.h"

namespace cincinnati::cli {
namespace {

// The installed release of a new state directory and the registry its payloads come from.
struct ReleaseArgs {
  std::string image, document, registry_ca_dir, registry_username, registry_password;
  std::vector<std::string> insecure_registries;
};

// The trusted keys and signature stores a release is verified with before it is applied.
struct VerificationArgs {
  std::string keys_dir, signature_ca_dir;
  std::vector<std::string> stores;
};

// How the update runner applies a release: what it leaves out and how long it waits.
struct UpdateRunnerArgs {
  std::string exclude_id;
  double component_timeout_seconds = 40 * 60, retry_seconds = 60;
};

// The update service the agent polls, how often and how much of its answers it reads.
struct UpstreamArgs {
  std::string channel, upstream = std::string(agent::kDefaultUpstream), update_service, ca_dir, arch;
  bool auto_update = false;
  double poll_seconds = 0;
  double fetch_timeout_seconds = 300;
  size_t max_answer_bytes = agent::kDefaultMaxAnswerBytes;
};

// The keys the update service's answers must be signed by.
struct AnswerSigningArgs {
  std::string public_keys_dir;
  bool require_signature = false;
};

// Prometheus, which the PromQL risks of conditional updates are evaluated against.
struct PrometheusArgs {
  std::string url, token_file, ca_dir;
  double risk_cache_seconds = 3600;
  bool hypershift = false;
};

// The update-attempt reports sent to the update service.
struct ReportsArgs {
  std::string url;
  double degraded_grace_seconds = 600, max_age_seconds = 7 * 24 * 3600;
};

// The agent's own API: where it listens and the token every request must carry.
struct ApiArgs {
  std::string address = "127.0.0.1", token_file, ports_file;
  uint16_t port = 9099;
};

// Everything `cincinnati agent` is told on its command line, by concern.
struct AgentArgs {
  std::string state_dir;
  ReleaseArgs release;
  VerificationArgs verification;
  UpdateRunnerArgs update;
  UpstreamArgs upstream;
  AnswerSigningArgs signing;
  PrometheusArgs prometheus;
  ReportsArgs reports;
  ApiArgs api;
  int verbosity = 0;
};

std::vector<std::string>& CommandLine() {
  static std::vector<std::string> args;
  return args;
}

// The same command line with the API on `port` (the one this process bound), so that
// the new agent answers where the old one did.
std::vector<std::string> HandOverArguments(uint16_t port) {
  std::vector<std::string> args = CommandLine();
  bool replaced = false;
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--port" && i + 1 < args.size()) {
      args[i + 1] = std::to_string(port), replaced = true;
    } else if (args[i].rfind("--port=", 0) == 0) {
      args[i] = "--port=" + std::to_string(port), replaced = true;
    }
  }
  if (!replaced) args.insert(args.end(), {"--port", std::to_string(port)});
  return args;
}

// The bearer token every API request must carry ("" when none), refused when missing on
// a listener off the loopback.
Result<std::string> ReadApiToken(const ApiArgs& api) {
  std::string token;
  if (!api.token_file.empty()) {
    CINCINNATI_ASSIGN_OR_RETURN(token, kube::ReadTokenFile(api.token_file, "--token-file"));
  }
  CINCINNATI_RETURN_IF_ERROR(kube::RequireTokenOffLoopback("--listen", api.address, !token.empty()));
  return token;
}

// One agent per state directory: two would overwrite each other's acknowledged writes.
Result<std::unique_ptr<env::FileLock>> LockStateDir(const std::string& state_dir) {
  CINCINNATI_RETURN_IF_ERROR(env::DefaultFileSystem().CreateDirectories(state_dir).WithContext("--state-dir"));
  auto lock = env::FileLock::Acquire(std::filesystem::path(state_dir) / ".lock");
  if (!lock.ok()) {
    return lock.status().WithContext(fmt::format("--state-dir {}: another agent runs on this state directory", state_dir));
  }
  return lock;
}

// The update service polled, and Prometheus for the conditional updates' risks.
Status SetUpstreamOptions(const UpstreamArgs& u, const PrometheusArgs& p, agent::AgentOptions& options) {
  options.initial_channel = u.channel;
  options.initial_upstream = u.upstream;
  options.update_service = u.update_service;
  options.upstream_ca_dir = u.ca_dir;
  options.arch = u.arch;
  options.prometheus = {p.url, p.token_file, p.ca_dir};
  options.hypershift = p.hypershift;
  options.auto_update = u.auto_update;
  options.risk_cache.min_for_condition = std::chrono::milliseconds(static_cast<int64_t>(p.risk_cache_seconds * 1000));
  options.poll_interval = std::chrono::milliseconds(static_cast<int64_t>(u.poll_seconds * 1000));
  options.fetch_timeout = std::chrono::milliseconds(static_cast<int64_t>(u.fetch_timeout_seconds * 1000));
  if (u.max_answer_bytes < 1024 || u.max_answer_bytes > (size_t{1} << 30)) {
    return Status::InvalidArgument("--upstream.max_answer_bytes must be between 1024 and 1073741824");
  }
  options.max_answer_bytes = u.max_answer_bytes;
  return Status::OK();
}

// Signed answers: the keys the update service's answers are checked with.
Status SetAnswerSignatures(const AnswerSigningArgs& a, agent::AgentOptions& options) {
  if (a.public_keys_dir.empty()) {
    if (!a.require_signature) return Status::OK();  // nothing is checked
    return Status::InvalidArgument("--upstream.require-signature needs --upstream.public-keys DIR, the keys the "
                                   "update service's answers must be signed by");
  }
  auto keys = env::LoadTrustedKeys(a.public_keys_dir);
  if (!keys.ok()) return keys.status().WithContext("--upstream.public-keys");
  if (keys->size() == 0) {
    return Status::InvalidArgument(fmt::format("--upstream.public-keys {}: no *.pem public key in it, so no signed "
                                               "answer could be accepted",
                                               a.public_keys_dir));
  }
  spdlog::info("the update service's answers are checked against {} trusted key(s) of {}; unsigned answers are {}",
               keys->size(), a.public_keys_dir, a.require_signature ? "refused" : "used");
  options.answer_keys = std::move(keys).value();
  options.require_answer_signature = a.require_signature;
  return Status::OK();
}

// Where update attempts are reported, and when a degraded component fails an attempt.
Status SetReportsOptions(const ReportsArgs& r, agent::AgentOptions& options) {
  if (!r.url.empty() && r.url.rfind("http://", 0) != 0 && r.url.rfind("https://", 0) != 0) {
    return Status::InvalidArgument("--reports.url must be an http:// or https:// URL");
  }
  if (r.degraded_grace_seconds < 0) return Status::InvalidArgument("--reports.degraded_grace must not be negative");
  if (r.max_age_seconds <= 0) return Status::InvalidArgument("--reports.max_age must be a positive number of seconds");
  options.reports.url = r.url;
  options.reports.max_age = std::chrono::seconds(static_cast<int64_t>(r.max_age_seconds));
  options.update.degraded_grace = std::chrono::seconds(static_cast<int64_t>(r.degraded_grace_seconds));
  return Status::OK();
}

// The update runner: where payloads go, how releases are verified and pulled, how long
// it waits for components and before it tries a refused release again.
void SetUpdateRunnerOptions(const AgentArgs& a, agent::AgentOptions& options) {
  const ReleaseArgs& release = a.release;
  options.update.payload_root = (std::filesystem::path(a.state_dir) / "updatepayloads").string();
  options.update.verification_keys_dir = a.verification.keys_dir;
  options.update.verification_stores = a.verification.stores;
  options.update.signature_ca_dir = a.verification.signature_ca_dir;
  options.update.registry_username = release.registry_username;
  options.update.registry_password = release.registry_password;
  options.update.registry_ca_dir = release.registry_ca_dir;
  options.update.exclude_id = a.update.exclude_id;
  options.update.insecure_registries = release.insecure_registries;
  if (release.image.rfind("http://", 0) == 0) {
    // An installed release named over plain HTTP: its registry is plain HTTP for the
    // pull specs without a scheme that graphs and the state carry.
    const std::string rest = release.image.substr(7);
    options.update.insecure_registries.push_back(rest.substr(0, rest.find('/')));
  }
  options.update.pull_running_payload = !release.image.empty();
  options.update.component_timeout = std::chrono::seconds(static_cast<int64_t>(a.update.component_timeout_seconds));
  options.update.retry_after = std::chrono::seconds(static_cast<int64_t>(a.update.retry_seconds));
  options.release.registry_username = release.registry_username;
  options.release.registry_password = release.registry_password;
}

// Every option of the agent from the command line, refusing what is out of range.
Status SetAgentOptions(const AgentArgs& a, agent::AgentOptions& options) {
  options.release = {a.release.image, a.release.document, "", "", a.release.registry_ca_dir};
  CINCINNATI_RETURN_IF_ERROR(SetUpstreamOptions(a.upstream, a.prometheus, options));
  CINCINNATI_RETURN_IF_ERROR(SetAnswerSignatures(a.signing, options));
  CINCINNATI_RETURN_IF_ERROR(SetReportsOptions(a.reports, options));
  SetUpdateRunnerOptions(a, options);
  if (!a.verification.keys_dir.empty()) {
    // Checked now, so that a typo is not found at the first update.
    CINCINNATI_RETURN_IF_ERROR(agent::VerificationFromFiles(a.verification.keys_dir, a.verification.stores).status());
  }
  return Status::OK();
}

// The hand-over the agent asked for while it ran, if any: the binary that takes over
// and the hand-over's id.
class HandOverRequest {
 public:
  void Set(const std::string& binary, const std::string& id) {
    std::lock_guard lock(mu_);
    to_.emplace(binary, id);
  }
  std::optional<std::pair<std::string, std::string>> Get() {
    std::lock_guard lock(mu_);
    return to_;
  }

 private:
  std::mutex mu_;
  std::optional<std::pair<std::string, std::string>> to_;
};

// The API's listeners: the sockets this process was given (by the agent it takes over
// from, or by systemd), else one bound on --listen and --port. Its port.
Result<uint16_t> ListenForApi(http_server::HttpServer& http, const ApiArgs& api,
                              std::vector<http_server::ListeningSocket> inherited, http_server::AsyncHandler handler) {
  if (inherited.empty()) return http.ListenAsync(api.address, api.port, std::move(handler));
  const size_t count = inherited.size();
  uint16_t first = 0;
  for (auto& socket : inherited) {
    CINCINNATI_ASSIGN_OR_RETURN(uint16_t port, http.ListenAsyncOn(std::move(socket), handler));
    if (first == 0) first = port;
  }
  spdlog::info("API on {} listening socket(s) this process was given (port {}); --listen and --port are not bound", count,
               first);
  return first;
}

// What serving ended with: the API's port, and its listeners when a hand-over takes
// them (open, no longer accepting).
struct Served {
  uint16_t port = 0;
  std::vector<http_server::ListeningSocket> listeners;
};

// Serves the agent's API and runs the agent until SIGTERM or SIGINT, or a hand-over.
Result<Served> ServeUntilSignal(agent::Agent& agent, const AgentArgs& a, const std::string& token,
                                std::vector<http_server::ListeningSocket> inherited, HandOverRequest& hand_over) {
  http_server::ServerLimits limits;
  limits.max_body_bytes = size_t{1} << 20;
  limits.threads = 2;
  http_server::HttpServer http(limits);
  http.SetErrorResponse(kube::ServerErrorResponse);
  http.CatchSignals();
  agent::ClusterVersionWatches watches([&] { return agent.ClusterVersionJson(); }, agent.resource_version());
  agent.OnSaved([&](int64_t resource_version) { watches.Changed(resource_version); });
  CINCINNATI_ASSIGN_OR_RETURN(uint16_t port,
                              ListenForApi(http, a.api, std::move(inherited), [&](const http_server::Request& r, auto respond) {
                                agent::ServeAgentApi(agent, watches, r, token, std::move(respond));
                              }));
  Served served{port, {}};
  if (!a.api.ports_file.empty()) {
    CINCINNATI_RETURN_IF_ERROR(env::WriteFileDurably(a.api.ports_file, fmt::format("main={}\nstatus={}\n", port, port)));
  }
  std::jthread loop([&](std::stop_token stop) { agent.Run(stop); });
  http.Start();
  std::cerr << fmt::format("cincinnati agent: API on http://{}/apis/config.openshift.io/v1/clusterversions/version, "
                           "state in {}\n",
                           kube::HostPort(a.api.address, port), a.state_dir);
  http.WaitForSignal(std::chrono::seconds(10), [&] {
    // A hand-over's new agent takes the listeners over: from now on connections wait in
    // their backlog for it. The watches end with a whole (empty) answer and their
    // clients watch again there; requests under way finish here.
    if (hand_over.Get()) served.listeners = http.ReleaseListeners();
    watches.EndAll();  // a waiting watch holds no shutdown
  });
  loop.request_stop();
  agent.Wake();
  loop.join();
  agent.OnSaved(nullptr);  // the watches end with this scope
  return served;
}

Status RunAgent(const AgentArgs& a) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("agent"));
  spdlog::set_level(a.verbosity <= 0 ? spdlog::level::info : spdlog::level::debug);
  // First: the new agent of a hand-over was started with its id and its listeners (and
  // passes them on to nobody; nothing is started before they are close-on-exec); so may
  // an agent systemd starts, with listeners.
  const std::string hand_over_id = agent::TakeHandOverId();
  auto inherited = http_server::TakeInheritedListeners();
  if (!inherited.ok()) {
    spdlog::warn("not serving the listening sockets this process was given: {}; binding {} instead",
                 inherited.status().message(), kube::HostPort(a.api.address, a.api.port));
    inherited = std::vector<http_server::ListeningSocket>{};
  }
  CINCINNATI_ASSIGN_OR_RETURN(std::string token, ReadApiToken(a.api));
  if (a.upstream.fetch_timeout_seconds <= 0) {
    return Status::InvalidArgument("--upstream.timeout must be a positive number of seconds");
  }
  CINCINNATI_ASSIGN_OR_RETURN(std::unique_ptr<env::FileLock> lock, LockStateDir(a.state_dir));
  agent::AgentOptions options;
  CINCINNATI_RETURN_IF_ERROR(SetAgentOptions(a, options));
  options.update.hand_over_id = hand_over_id;
  HandOverRequest hand_over;
  options.on_hand_over = [&](const std::string& binary, const std::string& id) {
    hand_over.Set(binary, id);
    env::SignalSelf(SIGTERM);  // ends the server's WaitForSignal: shut down, then hand over
  };
  auto store = std::make_shared<agent::FileObjectStore>(a.state_dir);
  CINCINNATI_ASSIGN_OR_RETURN(std::unique_ptr<agent::Agent> agent, agent::Agent::Open(store, options));
  CINCINNATI_ASSIGN_OR_RETURN(Served served, ServeUntilSignal(*agent, a, token, std::move(inherited).value(), hand_over));
  if (auto to = hand_over.Get()) {
    // Requests are done and the state directory is unlocked: the new agent locks it and
    // serves the listeners, the connections waiting in their backlog first. --port is
    // the bound one, in case it has to bind.
    lock->Release();
    CINCINNATI_RETURN_IF_ERROR(agent::HandOverTo(to->first, HandOverArguments(served.port), to->second,
                                                 std::move(served.listeners)));
  }
  return Status::OK();
}

// --state-dir, the installed release of a new state and its registry.
void AddReleaseFlags(CLI::App& cmd, std::string& state_dir, ReleaseArgs& r) {
  cmd.add_option("--state-dir", state_dir, "Directory of the agent's state (created; kept across restarts)")
      ->type_name("PATH")
      ->required();
  cmd.add_option("--release-image", r.image, "Installed release on an empty state directory: a release image")
      ->type_name("PULLSPEC");
  cmd.add_option("--release-document", r.document,
                 "Installed release on an empty state directory: a cincinnati-metadata-v0 JSON file with \"payload\" "
                 "(registry-less demo)")
      ->type_name("FILE");
  cmd.add_option("--registry.root_certificate_dir", r.registry_ca_dir,
                 "Extra CA certificates for the registry (--release-image, and the payloads of updates)")
      ->type_name("PATH");
  cmd.add_option("--registry.username", r.registry_username, "Registry user")->type_name("USER");
  cmd.add_option("--registry.insecure", r.insecure_registries,
                 "Pull from this registry over plain HTTP when a pull spec has no scheme (repeatable; e.g. a local "
                 "docker-registry at 127.0.0.1:5000)")
      ->type_name("HOST:PORT");
  cmd.add_option("--registry.password", r.registry_password, "Registry password")->type_name("PASSWORD");
}

// --verification.*, then the update runner's --exclude, --component-timeout and --update-retry.
void AddUpdateRunnerFlags(CLI::App& cmd, VerificationArgs& v, UpdateRunnerArgs& u) {
  cmd.add_option("--verification.keys", v.keys_dir,
                 "Trusted release keys when the running release has no verification ConfigMap: one keyring per file, "
                 "every keyring must sign")
      ->type_name("DIR");
  cmd.add_option("--verification.stores", v.stores, "Signature stores for --verification.keys (https, http or file URLs)")
      ->delimiter(',')
      ->type_name("URL");
  cmd.add_option("--verification.root_certificate_dir", v.signature_ca_dir, "Extra CA certificates for signature stores")
      ->type_name("PATH");
  cmd.add_option("--exclude", u.exclude_id, "Leave out manifests annotated exclude.release.openshift.io/ID=true")
      ->type_name("ID");
  cmd.add_option("--component-timeout", u.component_timeout_seconds,
                 "Seconds a run level may wait for its components before Failing names them")
      ->type_name("SECONDS")
      ->capture_default_str();
  cmd.add_option("--update-retry", u.retry_seconds, "Seconds before a refused release is tried again")
      ->type_name("SECONDS")
      ->capture_default_str();
}

// --channel, --upstream, --update-service and --upstream.* but the signing keys.
void AddUpstreamFlags(CLI::App& cmd, UpstreamArgs& u) {
  cmd.add_option("--channel", u.channel, "spec.channel of a new state (default: the release's first channel)")
      ->type_name("NAME");
  cmd.add_option("--upstream", u.upstream, "spec.upstream of a new state")->type_name("URL")->capture_default_str();
  cmd.add_option("--update-service", u.update_service, "Update service URL overriding spec.upstream")->type_name("URL");
  cmd.add_option("--upstream.root_certificate_dir", u.ca_dir, "Extra CA certificates for the update service")
      ->type_name("PATH");
  cmd.add_option("--upstream.timeout", u.fetch_timeout_seconds,
                 "Seconds one graph request may take (the CVO waits an hour; a slow service then holds polls that long)")
      ->type_name("SECONDS")
      ->capture_default_str();
  cmd.add_option("--upstream.max_answer_bytes", u.max_answer_bytes,
                 "Largest graph answer read; reading one takes up to 13 bytes of memory per byte of it")
      ->type_name("BYTES")
      ->capture_default_str();
}

// --upstream.public-keys and --upstream.require-signature.
void AddAnswerSigningFlags(CLI::App& cmd, AnswerSigningArgs& s) {
  cmd.add_option("--upstream.public-keys", s.public_keys_dir,
                 "Check the update service's signed answers (the Cincinnati-Signature header) against every *.pem "
                 "Ed25519 public key in this directory: an answer signed by no trusted key, for other bytes, channel "
                 "or arch, expired, or of an older graph generation than one already taken is refused "
                 "(RetrievedUpdates=False, reason Signature...): the updates shown stay as they were, unless the "
                 "channel, arch or upstream changed or a day passed since they were taken (then none are shown). Off "
                 "by default: nothing is checked")
      ->type_name("DIR");
  cmd.add_flag("--upstream.require-signature", s.require_signature,
               "Refuse unsigned answers too (SignatureMissing); without it an unsigned answer is used, unless the "
               "same update service's signed answer was taken before. Needs --upstream.public-keys");
}

// --reports.*.
void AddReportsFlags(CLI::App& cmd, ReportsArgs& r) {
  cmd.add_option("--reports.url", r.url,
                 "POST one report per update attempt to this endpoint of the update service (e.g. "
                 "http://127.0.0.1:8081/api/upgrades_info/v1/reports), once the attempt ends: completed, refused, or "
                 "a component failing past --component-timeout or --reports.degraded_grace. It says from, to, arch, "
                 "channel, Completed or Failed, the component and reason, start and end. Kept in --state-dir until "
                 "the service answers 2xx (a kill -9 loses none); retried after Retry-After or 30 s doubling to 1 h; "
                 "dropped on any other 4xx or after --reports.max_age. Off by default: nothing is written or sent")
      ->type_name("URL");
  cmd.add_option("--reports.degraded_grace", r.degraded_grace_seconds,
                 "Seconds a component may stay Degraded during an update before the attempt is reported Failed "
                 "(ClusterOperatorDegraded); a later recovery is not reported again")
      ->type_name("SECONDS")
      ->capture_default_str();
  cmd.add_option("--reports.max_age", r.max_age_seconds,
                 "Seconds after which a report the service never took is dropped unsent")
      ->type_name("SECONDS")
      ->capture_default_str();
}

// --arch, --prometheus.*, --enable-auto-update and --poll-interval: what a poll asks
// for, the risks it evaluates and what it does with the answer.
void AddPollFlags(CLI::App& cmd, UpstreamArgs& u, PrometheusArgs& p) {
  cmd.add_option("--arch", u.arch, "Architecture sent to the update service (default: this machine's)")->type_name("ARCH");
  cmd.add_option("--prometheus.url", p.url, "Prometheus (or Thanos) URL for PromQL risks")->type_name("URL");
  cmd.add_option("--prometheus.token_file", p.token_file, "Bearer token for Prometheus")->type_name("PATH");
  cmd.add_option("--prometheus.root_certificate_dir", p.ca_dir, "Extra CA certificates for Prometheus")
      ->type_name("PATH");
  cmd.add_flag("--hypershift", p.hypershift,
               "Running in a hosted control plane (as the CVO's --hypershift): each _id=\"\" in a risk's PromQL is rewritten to "
               "_id=\"<this cluster's id>\", for a Prometheus that holds many clusters' series (default off)");
  cmd.add_flag("--enable-auto-update", u.auto_update, "Set spec.desiredUpdate to the newest recommended update");
  cmd.add_option("--poll-interval", u.poll_seconds, "Seconds between polls (default: drawn from [120, 240) once)")
      ->type_name("SECONDS");
}

// --listen, --port and --token-file: the agent's API.
void AddApiFlags(CLI::App& cmd, ApiArgs& api) {
  cmd.add_option("--listen", api.address, "API address: an IP address or localhost (non-loopback needs --token-file)")->type_name("ADDRESS")->capture_default_str();
  cmd.add_option("--port", api.port,
                 "API port (0: any free port). Listening sockets given as systemd's socket activation gives them "
                 "(LISTEN_FDS, LISTEN_PID; as a hand-over's new agent gets the old one's) are served instead")
      ->type_name("PORT")
      ->capture_default_str();
  cmd.add_option("--token-file", api.token_file, "Bearer token every API request must carry")->type_name("PATH");
}

// --testing.* and -v.
void AddTestingFlags(CLI::App& cmd, AgentArgs& a) {
  cmd.add_option("--testing.risk_cache_seconds", a.prometheus.risk_cache_seconds,
                 "How long a PromQL risk's result is reused (the CVO's 1 h; for tests)")
      ->type_name("SECONDS")
      ->capture_default_str();
  cmd.add_option("--testing.ports_file", a.api.ports_file, "Write the bound port to this file (for tests)")->type_name("PATH");
  cmd.add_flag("-v,--verbose", a.verbosity, "More logging");
}

void RegisterAgentCommand(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<AgentArgs>();
  CLI::App* cmd = app.add_subcommand(
      "agent",
      "Run one cluster's update agent (the cluster-version operator's role): it keeps the ClusterVersion in "
      "--state-dir, polls the update service, lists available and conditional updates (PromQL risks against "
      "--prometheus.url) and waits for a desired update; its API is a Kubernetes-style HTTP API (see "
      "`cincinnati adm upgrade`)");
  AddReleaseFlags(*cmd, a->state_dir, a->release);
  AddUpdateRunnerFlags(*cmd, a->verification, a->update);
  AddUpstreamFlags(*cmd, a->upstream);
  AddAnswerSigningFlags(*cmd, a->signing);
  AddReportsFlags(*cmd, a->reports);
  AddPollFlags(*cmd, a->upstream, a->prometheus);
  AddApiFlags(*cmd, a->api);
  AddTestingFlags(*cmd, *a);
  cmd->callback([a, &exit_code] { Report(RunAgent(*a), exit_code); });
}

}  // namespace

void SetCommandLine(int argc, char** argv) {
  CommandLine().assign(argv, argv + argc);
}

void RegisterAgentCommands(CLI::App& app, int& exit_code) {
  RegisterComponentCommand(app, exit_code);
  RegisterAgentCommand(app, exit_code);
}

}  // namespace cincinnati::cli
