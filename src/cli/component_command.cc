// `cincinnati component`: one component (a second-level operator) against an agent's API,
// rolling out what the agent applies and reporting it in its ClusterOperator.
#include <fmt/format.h>
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <memory>
#include <thread>

#include "commands.h"
#include "component/component.h"
#include "kube/api_access.h"

namespace cincinnati::cli {
namespace {

// `cincinnati component`: the component's options and the token for the agent's API.
struct ComponentArgs {
  component::ComponentOptions options;
  std::string token_file;
};

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

void RegisterComponentCommand(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ComponentArgs>();
  component::ComponentOptions* c = &args->options;
  CLI::App* component = app.add_subcommand(
      "component",
      "Run one component (a second-level operator) against an agent: when the agent applies a release, roll out and "
      "report the new version in the component's ClusterOperator");
  component->add_option("--name", c->name, "The ClusterOperator this component owns")->required()->type_name("NAME");
  component->add_option("--agent", c->agent_url, "The agent's API")->type_name("URL")->default_val("http://127.0.0.1:9099");
  component->add_option("--token-file", args->token_file, "Bearer token for the agent's API")->type_name("PATH");
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
  component->callback([args, &exit_code] { Report(RunComponent(args->options, args->token_file), exit_code); });
}

}  // namespace cincinnati::cli
