// What reading a fleet file costs: `fleet_file_bench CLUSTERS [LABELS] [shared]` writes a
// fleet of CLUSTERS clusters (each with an agent URL, a token file and LABELS labels, 2 by
// default: about 155 bytes of YAML each at 2 labels; with `shared`, every cluster's labels
// are an alias of the first cluster's) to a temporary file, streaming it
// so that the writer adds nothing to the peak, then reads it with LoadFleet once and
// prints the file's size, the time LoadFleet took and the process's peak RSS
// (getrusage's ru_maxrss: the whole process, so run one size per process).
//
// `fleet_file_bench --file PATH` reads an existing file instead (and leaves it).
//
// Its own process, not a Google Benchmark: peak RSS only grows, so sizes measured one
// after another in one process would hide each other.
#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "operator/operator_config.h"

namespace {

namespace fs = std::filesystem;

long PeakRssKiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// One cluster as a fleet's administrator would write it (block style, labels last).
void WriteCluster(std::FILE* out, long i, int labels, bool shared) {
  fmt::print(out, "- name: c{0:07}\n  agent: https://c{0:07}.agents.example.com:8443\n  tokenFile: /etc/fleet/tokens/c{0:07}\n", i);
  if (labels == 0) return;
  if (shared && i > 0) {
    fmt::print(out, "  labels: *shared\n");
    return;
  }
  fmt::print(out, "  labels:{}\n    wave: w{}\n", shared ? " &shared" : "", i % 4);
  if (labels > 1) fmt::print(out, "    region: eu-west-{}\n", i % 3);
  for (int l = 2; l < labels; ++l) fmt::print(out, "    label-{}: value-{}\n", l, l);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fmt::print(stderr, "usage: fleet_file_bench CLUSTERS [LABELS [shared]] | --file PATH\n");
    return 2;
  }
  const bool given = std::string(argv[1]) == "--file" && argc > 2;
  const long clusters = given ? 0 : std::atol(argv[1]);
  const int labels = !given && argc > 2 ? std::atoi(argv[2]) : 2;
  const bool shared = !given && argc > 3 && std::string(argv[3]) == "shared";
  const fs::path path = given ? fs::path(argv[2]) : fs::temp_directory_path() / fmt::format("fleet-file-bench-{}.yaml", ::getpid());
  if (!given) {
    std::FILE* out = std::fopen(path.c_str(), "w");
    if (!out) return 1;
    std::fputs("clusters:\n", out);
    for (long i = 0; i < clusters; ++i) WriteCluster(out, i, labels, shared);
    std::fclose(out);
  }
  const auto bytes = fs::file_size(path);
  const long before = PeakRssKiB();

  const auto start = std::chrono::steady_clock::now();
  auto fleet = cincinnati::upgrade::LoadFleet(path.string());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const long peak = PeakRssKiB();
  if (!given) fs::remove(path);

  fmt::print("{} file_bytes={} read={} seconds={:.2f} peak_rss_kib={} rss_before_kib={}",
             given ? fmt::format("file={}", path.string()) : fmt::format("clusters={} labels={}{}", clusters, labels, shared ? " (shared)" : ""),
             bytes, fleet.ok() ? std::to_string(fleet->size()) : "error", seconds, peak, before);
  if (fleet.ok() && !fleet->empty()) {
    fmt::print(" bytes_per_cluster_beyond_file={:.0f}", (double(peak - before) * 1024 - double(bytes)) / double(fleet->size()));
  }
  fmt::print("\n");
  if (!fleet.ok()) fmt::print("error: {}\n", fleet.status().message().substr(0, 300));
  return fleet.ok() ? 0 : 1;
}
