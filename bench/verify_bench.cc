// Release signature verification (as the CVO does it) with a fresh ed25519 key made by the
// real gpg in a temporary home:
//   BM_VerifySignature: one signature: the OpenPGP check (GnuPG via GPGME) and the strict
//     decoding of its payload; what each signature of a store costs
//   BM_VerifyRelease_FileStore: a whole release: digest, a file:// store, two signatures
//     (one by an unknown key first), a fresh verifier each time (no success cache)
//   BM_VerifyRelease_Cached: the same release once verified (the success cache)
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "env/file_system.h"
#include "agent/release_verifier.h"
#include "registry/keyring.h"
#include "registry/signature.h"

namespace cincinnati::bench {
namespace {

namespace fs = std::filesystem;

struct Keys {
  fs::path dir;
  std::string public_key;
  std::string good, stranger;  // signed messages over the same payload
  std::string digest = "sha256:" + std::string(64, 'c');
  bool ok = false;

  Keys() {
    dir = fs::temp_directory_path() / ("cincinnati-verify-bench-" + std::to_string(::getpid()));
    for (const char* who : {"release", "stranger"}) {
      fs::create_directories(dir / who);
      fs::permissions(dir / who, fs::perms::owner_all);
      std::string gpg = "gpg --homedir " + (dir / who).string() + " --batch --pinentry-mode loopback --passphrase ''";
      if (std::system((gpg + " --quick-gen-key '" + who + " <" + who + "@example.com>' ed25519 sign 1d >/dev/null 2>&1").c_str()) != 0) return;
      if (std::string(who) == "release" &&
          std::system((gpg + " --armor --export > " + (dir / "release.asc").string() + " 2>/dev/null").c_str()) != 0) {
        return;
      }
    }
    std::ifstream in(dir / "release.asc");
    public_key.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    const std::string payload = registry::WriteAtomicSignature({digest, "quay.io/ocp/release:4.1.1", "bench", 1700000000});
    auto g = registry::SignMessage(payload, (dir / "release").string(), "");
    auto s = registry::SignMessage(payload, (dir / "stranger").string(), "");
    if (!g.ok() || !s.ok()) return;
    good = *g, stranger = *s;
    const fs::path store = dir / "store" / ("sha256=" + std::string(64, 'c'));
    fs::create_directories(store);
    ok = env::WriteFileDurably(store / "signature-1", stranger).ok() && env::WriteFileDurably(store / "signature-2", good).ok();
  }
  ~Keys() {
    for (const char* who : {"release", "stranger"}) {
      (void)std::system(("gpgconf --homedir " + (dir / who).string() + " --kill all >/dev/null 2>&1").c_str());
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

Keys& TheKeys() {
  static Keys keys;
  return keys;
}

agent::VerificationConfig Config() {
  agent::VerificationConfig config;
  config.keyrings.push_back(registry::Keyring::Open("release", {TheKeys().public_key}).value());
  config.stores = {"file://" + (TheKeys().dir / "store").string()};
  return config;
}

void BM_VerifySignature(benchmark::State& state) {
  if (!TheKeys().ok) return state.SkipWithError("gpg could not make keys");
  auto keyring = registry::Keyring::Open("release", {TheKeys().public_key}).value();
  for (auto _ : state) {
    auto message = keyring->Verify(TheKeys().good);
    auto content = registry::ParseAtomicSignature(message.value().payload);
    if (!content.ok() || content->digest != TheKeys().digest) return state.SkipWithError("did not verify");
  }
}
BENCHMARK(BM_VerifySignature)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_VerifyRelease_FileStore(benchmark::State& state) {
  if (!TheKeys().ok) return state.SkipWithError("gpg could not make keys");
  agent::VerificationConfig config = Config();
  for (auto _ : state) {
    agent::ReleaseVerifier verifier(config);
    auto got = verifier.Verify("quay.io/ocp/release@" + TheKeys().digest, std::nullopt,
                               std::chrono::steady_clock::now() + std::chrono::seconds(30));
    if (!got.ok()) return state.SkipWithError(got.status().message().c_str());
  }
}
BENCHMARK(BM_VerifyRelease_FileStore)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_VerifyRelease_Cached(benchmark::State& state) {
  if (!TheKeys().ok) return state.SkipWithError("gpg could not make keys");
  agent::ReleaseVerifier verifier(Config());
  const std::string pullspec = "quay.io/ocp/release@" + TheKeys().digest;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  if (!verifier.Verify(pullspec, std::nullopt, deadline).ok()) return state.SkipWithError("did not verify");
  for (auto _ : state) benchmark::DoNotOptimize(verifier.Verify(pullspec, std::nullopt, deadline));
}
BENCHMARK(BM_VerifyRelease_Cached)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace cincinnati::bench
