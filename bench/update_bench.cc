// One whole update by the agent, in process: from spec.desiredUpdate to history
// Completed, for a payload of 200 manifests (10 run levels, each 2 ClusterOperators and
// 18 ConfigMaps) in a real Debian docker-registry on 127.0.0.1, signed with a fresh
// ed25519 key into a file:// store. Components are instant: between two passes of the
// loop, every ClusterOperator asked for a version reports it. Each iteration starts
// from a new state directory at 4.1.0, so it includes the signature check, the pull,
// unpacking, loading and applying. What it measures is the agent's own overhead.
//   BM_UpdateToCompleted_200Manifests
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "agent/agent.h"
#include "agent/release_verifier.h"
#include "http/client.h"
#include "registry/keyring.h"
#include "registry/release_image.h"
#include "registry/signature.h"

extern char** environ;

namespace cincinnati::bench {
namespace {

namespace fs = std::filesystem;
using kube::JsonValue;
using kube::FindMember;
using kube::TextOf;
using kube::ItemsOf;

int FreePort() {
  static int next = 20000 + (::getpid() % 20000);
  return next++;
}

struct Setup {
  fs::path dir;
  pid_t registry_pid = 0;
  std::string registry, target, installed_document, error;

  Setup() {
    dir = fs::temp_directory_path() / ("cincinnati-update-bench-" + std::to_string(::getpid()));
    fs::create_directories(dir / "home");
    fs::permissions(dir / "home", fs::perms::owner_all);
    if (!fs::exists("/usr/bin/docker-registry")) {
      error = "no /usr/bin/docker-registry";
      return;
    }
    const int port = FreePort();
    registry = "127.0.0.1:" + std::to_string(port);
    std::ofstream(dir / "registry.yml") << "version: 0.1\nlog: {level: error}\nstorage:\n  filesystem: {rootdirectory: "
                                        << (dir / "data").string() << "}\nhttp:\n  addr: " << registry << "\n";
    std::string config = (dir / "registry.yml").string();
    char* argv[] = {const_cast<char*>("/usr/bin/docker-registry"), const_cast<char*>("serve"), config.data(), nullptr};
    if (posix_spawn(&registry_pid, argv[0], nullptr, nullptr, argv, environ) != 0) {
      error = "cannot start docker-registry";
      return;
    }
    for (int i = 0; i < 200 && http::Request("http://" + registry + "/v2/").status != 200; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    const std::string gpg = "gpg --homedir " + (dir / "home").string() + " --batch --pinentry-mode loopback --passphrase ''";
    if (std::system((gpg + " --quick-gen-key 'bench <bench@example.com>' ed25519 sign 1d >/dev/null 2>&1").c_str()) != 0 ||
        std::system((gpg + " --armor --export > " + (dir / "keys.asc").string() + " 2>/dev/null").c_str()) != 0) {
      error = "gpg could not make a key";
      return;
    }
    fs::create_directories(dir / "keys");
    fs::rename(dir / "keys.asc", dir / "keys" / "release.asc");

    registry::NewRelease release;
    release.metadata.version = *Version::Parse("4.1.1");
    release.metadata.previous = {*Version::Parse("4.1.0")};
    const std::string include = "    include.release.openshift.io/self-managed-high-availability: \"true\"\n";
    for (int level = 0; level < 10; ++level) {
      for (int c = 0; c < 2; ++c) {
        const std::string component = fmt::format("component{}-{}", level, c);
        const std::string prefix = fmt::format("0000_{:02}_{}_", 10 + level * 5, component);
        release.payload_manifests.push_back(
            {prefix + "00-clusteroperator.yaml", "apiVersion: config.openshift.io/v1\nkind: ClusterOperator\nmetadata:\n  name: " +
                                                     component + "\n  annotations:\n" + include});
        for (int m = 0; m < 9; ++m) {
          release.payload_manifests.push_back(
              {prefix + fmt::format("{:02}-config.yaml", m + 1),
               fmt::format("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {}-{}\n  namespace: ns-{}\n  annotations:\n{}"
                           "data:\n  image: '{{{{.ReleaseImage}}}}'\n  value: \"{}\"\n",
                           component, m, component, include, std::string(200, 'x'))});
        }
      }
    }
    auto location = registry::ParseRepositoryLocation("http://" + registry, "ocp/release");
    registry::RegistryClient client(*location);
    auto digest = registry::PushRelease(client, "4.1.1", release);
    if (!digest.ok()) {
      error = digest.status().message();
      return;
    }
    target = "http://" + registry + "/ocp/release@" + *digest;  // plain HTTP: no scheme would mean https
    auto signature = registry::SignMessage(
        registry::WriteAtomicSignature({*digest, registry + "/ocp/release:4.1.1", "bench", 1700000000}),
        (dir / "home").string(), "");
    if (!signature.ok()) {
      error = signature.status().message();
      return;
    }
    fs::create_directories(dir / "store" / ("sha256=" + digest->substr(7)));
    std::ofstream(dir / "store" / ("sha256=" + digest->substr(7)) / "signature-1", std::ios::binary) << *signature;
    installed_document = (dir / "4.1.0.json").string();
    std::ofstream(installed_document) << R"({"kind":"cincinnati-metadata-v0","version":"4.1.0","payload":")" << registry
                                      << R"(/ocp/release@sha256:)" << std::string(64, '0') << "\"}";
  }
  ~Setup() {
    if (registry_pid > 0) {
      ::kill(registry_pid, SIGTERM);
      ::waitpid(registry_pid, nullptr, 0);
    }
    (void)std::system(("gpgconf --homedir " + (dir / "home").string() + " --kill all >/dev/null 2>&1").c_str());
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

Setup& TheSetup() {
  static Setup setup;
  return setup;
}

// Every ClusterOperator asked for a version reports it at once.
void InstantComponents(agent::Agent& a) {
  auto items = a.ListComponents();
  if (!items.ok()) return;
  for (const JsonValue& co : *items) {
    const JsonValue* md = FindMember(co, "metadata");
    const JsonValue* ann = md ? FindMember(*md, "annotations") : nullptr;
    const JsonValue* want = ann ? FindMember(*ann, agent::kDesiredVersionAnnotation) : nullptr;
    if (!want) continue;
    auto patch = kube::ParseJson(R"({"status":{"versions":[{"name":"operator","version":")" + TextOf(*want) +
                                  R"("}],"conditions":[{"type":"Available","status":"True"}]}})");
    (void)a.PatchComponentStatus(TextOf(*FindMember(*md, "name")), *patch);
  }
}

void BM_UpdateToCompleted_200Manifests(benchmark::State& state) {
  Setup& s = TheSetup();
  if (!s.error.empty()) return state.SkipWithError(s.error.c_str());
  static int round = 0;  // across repetitions too: every update starts from a new state
  for (auto _ : state) {
    const fs::path state_dir = s.dir / ("state-" + std::to_string(round++));
    agent::AgentOptions options;
    options.release.release_document = s.installed_document;
    options.initial_upstream = "http://127.0.0.1:1/graph";
    options.initial_channel = "stable-4.1";
    options.poll_interval = std::chrono::hours(1);
    options.update.payload_root = (state_dir / "updatepayloads").string();
    options.update.verification_keys_dir = (s.dir / "keys").string();
    options.update.verification_stores = {"file://" + (s.dir / "store").string()};
    auto a = agent::Agent::Open(std::make_shared<agent::FileObjectStore>(state_dir), options);
    if (!a.ok()) return state.SkipWithError(a.status().message().c_str());
    (void)(*a)->RunPass();  // the first poll (its upstream is down: RetrievedUpdates False)
    auto request = kube::ParseJson(R"({"spec":{"desiredUpdate":{"image":")" + s.target + R"(","version":"4.1.1"}}})");
    const auto start = std::chrono::steady_clock::now();
    (void)(*a)->PatchClusterVersion(*request);
    bool done = false;
    for (int pass = 0; pass < 200 && !done; ++pass) {
      (void)(*a)->RunPass();
      InstantComponents(**a);
      JsonValue cv = (*a)->ClusterVersionJson();
      const JsonValue& first = ItemsOf(*FindMember(*FindMember(cv, "status"), "history"))[0];
      done = TextOf(*FindMember(first, "state")) == "Completed" && TextOf(*FindMember(first, "version")) == "4.1.1";
    }
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    a->reset();
    std::error_code ec;
    fs::remove_all(state_dir, ec);
    if (!done) {
      return state.SkipWithError("the update did not complete");
    }
  }
}
BENCHMARK(BM_UpdateToCompleted_200Manifests)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(10);

}  // namespace
}  // namespace cincinnati::bench
