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
#include "component/component.h"
#include "core/strings.h"
#include "env/file_system.h"
#include "env/key_files.h"
#include "env/process.h"
#include "kube/api_access.h"
#include "kube/status_document.h"
#include "http_server/http_server.h"

namespace cincinnati::cli {
namespace {

struct AgentArgs {
  std::string state_dir, release_image, release_document, registry_ca_dir;
  std::string channel, upstream = std::string(agent::kDefaultUpstream), update_service, upstream_ca_dir, arch;
  std::string prometheus_url, prometheus_token_file, prometheus_ca_dir;
  std::string verification_keys, signature_ca_dir, registry_username, registry_password, exclude_id;
  std::vector<std::string> verification_stores, insecure_registries;
  double component_timeout_seconds = 40 * 60, retry_seconds = 60;
  bool auto_update = false;
  double poll_seconds = 0;
  double risk_cache_seconds = 3600;
  double fetch_timeout_seconds = 300;
  size_t max_answer_bytes = agent::kDefaultMaxAnswerBytes;
  std::string reports_url;
  std::string upstream_public_keys;
  bool require_signature = false;
  double degraded_grace_seconds = 600, reports_max_age_seconds = 7 * 24 * 3600;
  std::string address = "127.0.0.1", token_file, ports_file;
  uint16_t port = 9099;
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

// Signed answers: the keys the update service's answers are checked with.
Status SetAnswerSignatures(const AgentArgs& a, agent::AgentOptions& options) {
  if (a.upstream_public_keys.empty()) {
    if (!a.require_signature) return Status::OK();  // nothing is checked
    return Status::InvalidArgument("--upstream.require-signature needs --upstream.public-keys DIR, the keys the "
                                   "update service's answers must be signed by");
  }
  auto keys = env::LoadTrustedKeys(a.upstream_public_keys);
  if (!keys.ok()) return keys.status().WithContext("--upstream.public-keys");
  if (keys->size() == 0) {
    return Status::InvalidArgument(fmt::format("--upstream.public-keys {}: no *.pem public key in it, so no signed "
                                               "answer could be accepted",
                                               a.upstream_public_keys));
  }
  spdlog::info("the update service's answers are checked against {} trusted key(s) of {}; unsigned answers are {}",
               keys->size(), a.upstream_public_keys, a.require_signature ? "refused" : "used");
  options.answer_keys = std::move(keys).value();
  options.require_answer_signature = a.require_signature;
  return Status::OK();
}

Status RunAgent(const AgentArgs& a) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("agent"));
  spdlog::set_level(a.verbosity <= 0 ? spdlog::level::info : spdlog::level::debug);
  std::string token;
  if (!a.token_file.empty()) {
    CINCINNATI_ASSIGN_OR_RETURN(token, kube::ReadTokenFile(a.token_file, "--token-file"));
  }
  CINCINNATI_RETURN_IF_ERROR(kube::RequireTokenOffLoopback("--listen", a.address, !token.empty()));
  if (a.fetch_timeout_seconds <= 0) return Status::InvalidArgument("--upstream.timeout must be a positive number of seconds");
  // One agent per state directory: two would overwrite each other's acknowledged writes.
  CINCINNATI_RETURN_IF_ERROR(env::DefaultFileSystem().CreateDirectories(a.state_dir).WithContext("--state-dir"));
  auto lock = env::FileLock::Acquire(std::filesystem::path(a.state_dir) / ".lock");
  if (!lock.ok()) {
    return lock.status().WithContext(fmt::format("--state-dir {}: another agent runs on this state directory", a.state_dir));
  }
  agent::AgentOptions options;
  options.release = {a.release_image, a.release_document, "", "", a.registry_ca_dir};
  options.initial_channel = a.channel;
  options.initial_upstream = a.upstream;
  options.update_service = a.update_service;
  options.upstream_ca_dir = a.upstream_ca_dir;
  options.arch = a.arch;
  options.prometheus = {a.prometheus_url, a.prometheus_token_file, a.prometheus_ca_dir};
  options.auto_update = a.auto_update;
  options.risk_cache.min_for_condition = std::chrono::milliseconds(static_cast<int64_t>(a.risk_cache_seconds * 1000));
  options.poll_interval = std::chrono::milliseconds(static_cast<int64_t>(a.poll_seconds * 1000));
  options.fetch_timeout = std::chrono::milliseconds(static_cast<int64_t>(a.fetch_timeout_seconds * 1000));
  if (a.max_answer_bytes < 1024 || a.max_answer_bytes > (size_t{1} << 30)) {
    return Status::InvalidArgument("--upstream.max_answer_bytes must be between 1024 and 1073741824");
  }
  options.max_answer_bytes = a.max_answer_bytes;
  CINCINNATI_RETURN_IF_ERROR(SetAnswerSignatures(a, options));
  if (!a.reports_url.empty() && a.reports_url.rfind("http://", 0) != 0 && a.reports_url.rfind("https://", 0) != 0) {
    return Status::InvalidArgument("--reports.url must be an http:// or https:// URL");
  }
  if (a.degraded_grace_seconds < 0) return Status::InvalidArgument("--reports.degraded_grace must not be negative");
  if (a.reports_max_age_seconds <= 0) return Status::InvalidArgument("--reports.max_age must be a positive number of seconds");
  options.reports.url = a.reports_url;
  options.reports.max_age = std::chrono::seconds(static_cast<int64_t>(a.reports_max_age_seconds));
  options.update.degraded_grace = std::chrono::seconds(static_cast<int64_t>(a.degraded_grace_seconds));
  options.update.payload_root = (std::filesystem::path(a.state_dir) / "updatepayloads").string();
  options.update.verification_keys_dir = a.verification_keys;
  options.update.verification_stores = a.verification_stores;
  options.update.signature_ca_dir = a.signature_ca_dir;
  options.update.registry_username = a.registry_username;
  options.update.registry_password = a.registry_password;
  options.update.registry_ca_dir = a.registry_ca_dir;
  options.update.exclude_id = a.exclude_id;
  options.update.insecure_registries = a.insecure_registries;
  if (a.release_image.rfind("http://", 0) == 0) {
    // An installed release named over plain HTTP: its registry is plain HTTP for the
    // pull specs without a scheme that graphs and the state carry.
    const std::string rest = a.release_image.substr(7);
    options.update.insecure_registries.push_back(rest.substr(0, rest.find('/')));
  }
  options.update.pull_running_payload = !a.release_image.empty();
  options.update.component_timeout = std::chrono::seconds(static_cast<int64_t>(a.component_timeout_seconds));
  options.update.retry_after = std::chrono::seconds(static_cast<int64_t>(a.retry_seconds));
  options.release.registry_username = a.registry_username;
  options.release.registry_password = a.registry_password;
  if (!a.verification_keys.empty()) {
    // Checked now, so that a typo is not found at the first update.
    CINCINNATI_RETURN_IF_ERROR(agent::VerificationFromFiles(a.verification_keys, a.verification_stores).status());
  }
  // The new agent of a hand-over was started with its id (and passes it on to nobody).
  options.update.hand_over_id = agent::TakeHandOverId();
  std::mutex hand_over_mu;
  std::optional<std::pair<std::string, std::string>> hand_over_to;  // binary, id
  options.on_hand_over = [&](const std::string& binary, const std::string& id) {
    {
      std::lock_guard lock(hand_over_mu);
      hand_over_to.emplace(binary, id);
    }
    env::SignalSelf(SIGTERM);  // ends WaitForSignal below: shut down, then hand over
  };
  auto store = std::make_shared<agent::FileObjectStore>(a.state_dir);
  CINCINNATI_ASSIGN_OR_RETURN(std::unique_ptr<agent::Agent> agent, agent::Agent::Open(store, options));

  http_server::ServerLimits limits;
  limits.max_body_bytes = size_t{1} << 20;
  limits.threads = 2;
  http_server::HttpServer http(limits);
  http.SetErrorResponse(kube::ServerErrorResponse);
  http.CatchSignals();
  agent::ClusterVersionWatches watches([&] { return agent->ClusterVersionJson(); }, agent->resource_version());
  agent->OnSaved([&](int64_t resource_version) { watches.Changed(resource_version); });
  CINCINNATI_ASSIGN_OR_RETURN(uint16_t port, http.ListenAsync(a.address, a.port, [&](const http_server::Request& r, auto respond) {
                                agent::ServeAgentApi(*agent, watches, r, token, std::move(respond));
                              }));
  if (!a.ports_file.empty()) {
    CINCINNATI_RETURN_IF_ERROR(env::WriteFileDurably(a.ports_file, fmt::format("main={}\nstatus={}\n", port, port)));
  }
  std::jthread loop([&](std::stop_token stop) { agent->Run(stop); });
  http.Start();
  std::cerr << fmt::format("cincinnati agent: API on http://{}/apis/config.openshift.io/v1/clusterversions/version, "
                           "state in {}\n",
                           kube::HostPort(a.address, port), a.state_dir);
  http.WaitForSignal(std::chrono::seconds(10), [&] { watches.EndAll(); });  // a waiting watch holds no shutdown
  loop.request_stop();
  agent->Wake();
  loop.join();
  agent->OnSaved(nullptr);  // the watches end with this scope
  std::lock_guard hand_over_lock(hand_over_mu);
  if (hand_over_to) {
    // The port is free again (the server shut down and closed it) and the state
    // directory is unlocked: the new agent binds and locks them.
    (*lock)->Release();
    CINCINNATI_RETURN_IF_ERROR(agent::HandOverTo(hand_over_to->first, HandOverArguments(port), hand_over_to->second));
  }
  return Status::OK();
}

Status RunComponent(component::ComponentOptions options, const std::string& token_file) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("component"));
  if (!token_file.empty()) {
    CINCINNATI_ASSIGN_OR_RETURN(options.token, kube::ReadTokenFile(token_file, "--token-file"));
  }
  while (!options.agent_url.empty() && options.agent_url.back() == '/') options.agent_url.pop_back();
  // SIGTERM and SIGINT wait for sigwait below, in every thread.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  component::Component component(options);
  std::jthread loop([&](std::stop_token stop) { component.Run(stop); });
  std::cerr << fmt::format("cincinnati component {}: reconciling against {}\n", options.name, options.agent_url);
  int received = 0;
  sigwait(&signals, &received);
  return Status::OK();
}

}  // namespace

void SetCommandLine(int argc, char** argv) {
  CommandLine().assign(argv, argv + argc);
}

void RegisterAgentCommands(CLI::App& app, int& exit_code) {
  auto c = std::make_shared<component::ComponentOptions>();
  auto token_file = std::make_shared<std::string>();
  CLI::App* component = app.add_subcommand(
      "component",
      "Run one component (a second-level operator) against an agent: when the agent applies a release, roll out and "
      "report the new version in the component's ClusterOperator");
  component->add_option("--name", c->name, "The ClusterOperator this component owns")->required()->type_name("NAME");
  component->add_option("--agent", c->agent_url, "The agent's API")->type_name("URL")->default_val("http://127.0.0.1:9099");
  component->add_option("--token-file", *token_file, "Bearer token for the agent's API")->type_name("PATH");
  component->add_option("--version", c->initial_version, "Version reported when the component first registers")
      ->type_name("VERSION");
  component->add_option("--rollout-seconds", c->rollout_seconds,
                        "Seconds a rollout takes unless the manifest says otherwise")
      ->type_name("SECONDS")
      ->capture_default_str();
  component->add_option("--machines", c->machines,
                        "Play the machine-config role: a pool of this many machines updated one by one")
      ->type_name("N");
  component->add_flag("--fail", c->fail, "Report Degraded=True instead of finishing a rollout (tests, demonstrations)");
  component->add_flag("--hang", c->hang, "Never finish a rollout (tests, demonstrations)");
  component->callback([c, token_file, &exit_code] {
    Status s = RunComponent(*c, *token_file);
    if (!s.ok()) {
      std::cerr << "error: " << s.message() << '\n';
      exit_code = 1;
    }
  });

  auto a = std::make_shared<AgentArgs>();
  CLI::App* cmd = app.add_subcommand(
      "agent",
      "Run one cluster's update agent (the cluster-version operator's role): it keeps the ClusterVersion in "
      "--state-dir, polls the update service, lists available and conditional updates (PromQL risks against "
      "--prometheus.url) and waits for a desired update; its API is a Kubernetes-style HTTP API (see "
      "`cincinnati adm upgrade`)");
  cmd->add_option("--state-dir", a->state_dir, "Directory of the agent's state (created; kept across restarts)")
      ->type_name("PATH")
      ->required();
  cmd->add_option("--release-image", a->release_image, "Installed release on an empty state directory: a release image")
      ->type_name("PULLSPEC");
  cmd->add_option("--release-document", a->release_document,
                  "Installed release on an empty state directory: a cincinnati-metadata-v0 JSON file with \"payload\" "
                  "(registry-less demo)")
      ->type_name("FILE");
  cmd->add_option("--registry.root_certificate_dir", a->registry_ca_dir,
                  "Extra CA certificates for the registry (--release-image, and the payloads of updates)")
      ->type_name("PATH");
  cmd->add_option("--registry.username", a->registry_username, "Registry user")->type_name("USER");
  cmd->add_option("--registry.insecure", a->insecure_registries,
                  "Pull from this registry over plain HTTP when a pull spec has no scheme (repeatable; e.g. a local "
                  "docker-registry at 127.0.0.1:5000)")
      ->type_name("HOST:PORT");
  cmd->add_option("--registry.password", a->registry_password, "Registry password")->type_name("PASSWORD");
  cmd->add_option("--verification.keys", a->verification_keys,
                  "Trusted release keys when the running release has no verification ConfigMap: one keyring per file, "
                  "every keyring must sign")
      ->type_name("DIR");
  cmd->add_option("--verification.stores", a->verification_stores,
                  "Signature stores for --verification.keys (https, http or file URLs)")
      ->delimiter(',')
      ->type_name("URL");
  cmd->add_option("--verification.root_certificate_dir", a->signature_ca_dir, "Extra CA certificates for signature stores")
      ->type_name("PATH");
  cmd->add_option("--exclude", a->exclude_id, "Leave out manifests annotated exclude.release.openshift.io/ID=true")
      ->type_name("ID");
  cmd->add_option("--component-timeout", a->component_timeout_seconds,
                  "Seconds a run level may wait for its components before Failing names them")
      ->type_name("SECONDS")
      ->capture_default_str();
  cmd->add_option("--update-retry", a->retry_seconds, "Seconds before a refused release is tried again")
      ->type_name("SECONDS")
      ->capture_default_str();
  cmd->add_option("--channel", a->channel, "spec.channel of a new state (default: the release's first channel)")
      ->type_name("NAME");
  cmd->add_option("--upstream", a->upstream, "spec.upstream of a new state")->type_name("URL")->capture_default_str();
  cmd->add_option("--update-service", a->update_service, "Update service URL overriding spec.upstream")->type_name("URL");
  cmd->add_option("--upstream.root_certificate_dir", a->upstream_ca_dir, "Extra CA certificates for the update service")
      ->type_name("PATH");
  cmd->add_option("--upstream.timeout", a->fetch_timeout_seconds,
                  "Seconds one graph request may take (the CVO waits an hour; a slow service then holds polls that long)")
      ->type_name("SECONDS")
      ->capture_default_str();
  cmd->add_option("--upstream.max_answer_bytes", a->max_answer_bytes,
                  "Largest graph answer read; reading one takes up to 13 bytes of memory per byte of it")
      ->type_name("BYTES")
      ->capture_default_str();
  cmd->add_option("--upstream.public-keys", a->upstream_public_keys,
                  "Check the update service's signed answers (the Cincinnati-Signature header) against every *.pem "
                  "Ed25519 public key in this directory: an answer signed by no trusted key, for other bytes, channel "
                  "or arch, expired, or of an older graph generation than one already taken is refused "
                  "(RetrievedUpdates=False, reason Signature...): the updates shown stay as they were, unless the "
                  "channel, arch or upstream changed or a day passed since they were taken (then none are shown). Off "
                  "by default: nothing is checked")
      ->type_name("DIR");
  cmd->add_flag("--upstream.require-signature", a->require_signature,
                "Refuse unsigned answers too (SignatureMissing); without it an unsigned answer is used, unless the "
                "same update service's signed answer was taken before. Needs --upstream.public-keys");
  cmd->add_option("--reports.url", a->reports_url,
                  "POST one report per update attempt to this endpoint of the update service (e.g. "
                  "http://127.0.0.1:8081/api/upgrades_info/v1/reports), once the attempt ends: completed, refused, or "
                  "a component failing past --component-timeout or --reports.degraded_grace. It says from, to, arch, "
                  "channel, Completed or Failed, the component and reason, start and end. Kept in --state-dir until "
                  "the service answers 2xx (a kill -9 loses none); retried after Retry-After or 30 s doubling to 1 h; "
                  "dropped on any other 4xx or after --reports.max_age. Off by default: nothing is written or sent")
      ->type_name("URL");
  cmd->add_option("--reports.degraded_grace", a->degraded_grace_seconds,
                  "Seconds a component may stay Degraded during an update before the attempt is reported Failed "
                  "(ClusterOperatorDegraded); a later recovery is not reported again")
      ->type_name("SECONDS")
      ->capture_default_str();
  cmd->add_option("--reports.max_age", a->reports_max_age_seconds,
                  "Seconds after which a report the service never took is dropped unsent")
      ->type_name("SECONDS")
      ->capture_default_str();
  cmd->add_option("--arch", a->arch, "Architecture sent to the update service (default: this machine's)")->type_name("ARCH");
  cmd->add_option("--prometheus.url", a->prometheus_url, "Prometheus (or Thanos) URL for PromQL risks")->type_name("URL");
  cmd->add_option("--prometheus.token_file", a->prometheus_token_file, "Bearer token for Prometheus")->type_name("PATH");
  cmd->add_option("--prometheus.root_certificate_dir", a->prometheus_ca_dir, "Extra CA certificates for Prometheus")
      ->type_name("PATH");
  cmd->add_flag("--enable-auto-update", a->auto_update, "Set spec.desiredUpdate to the newest recommended update");
  cmd->add_option("--poll-interval", a->poll_seconds, "Seconds between polls (default: drawn from [120, 240) once)")
      ->type_name("SECONDS");
  cmd->add_option("--listen", a->address, "API address: an IP address or localhost (non-loopback needs --token-file)")->type_name("ADDRESS")->capture_default_str();
  cmd->add_option("--port", a->port, "API port (0: any free port)")->type_name("PORT")->capture_default_str();
  cmd->add_option("--token-file", a->token_file, "Bearer token every API request must carry")->type_name("PATH");
  cmd->add_option("--testing.risk_cache_seconds", a->risk_cache_seconds,
                  "How long a PromQL risk's result is reused (the CVO's 1 h; for tests)")
      ->type_name("SECONDS")
      ->capture_default_str();
  cmd->add_option("--testing.ports_file", a->ports_file, "Write the bound port to this file (for tests)")->type_name("PATH");
  cmd->add_flag("-v,--verbose", a->verbosity, "More logging");
  cmd->callback([a, &exit_code] {
    Status s = RunAgent(*a);
    if (!s.ok()) {
      std::cerr << "error: " << s.message() << '\n';
      exit_code = 1;
    }
  });
}

}  // namespace cincinnati::cli
