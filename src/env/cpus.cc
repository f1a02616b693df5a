#include "env/cpus.h"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <sstream>
#include <string>
#include <thread>

#include "env/file_system.h"

namespace cincinnati::env {
namespace {

std::optional<std::size_t> AffinityCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return std::nullopt;
  int n = CPU_COUNT(&set);
  if (n <= 0) return std::nullopt;
  return static_cast<std::size_t>(n);
}

// A small kernel file's text ("" when it cannot be read: it then limits nothing).
std::string ReadSmallFile(const std::string& path) {
  Result<std::string> text = ReadFile(path, 4096);
  return text.ok() ? std::move(*text) : std::string();
}

// The cgroup v2 path of this process ("0::/PATH" in /proc/self/cgroup); empty if none.
std::string OwnCgroup() {
  std::istringstream lines(ReadSmallFile("/proc/self/cgroup"));
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  }
  return {};
}

bool ParseCount(std::string_view text, unsigned long long& value) {
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::optional<std::size_t> CpusOfQuota(std::string_view cpu_max) {
  while (!cpu_max.empty() && (cpu_max.back() == '\n' || cpu_max.back() == ' ')) cpu_max.remove_suffix(1);
  auto space = cpu_max.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  unsigned long long quota = 0, period = 0;
  if (!ParseCount(cpu_max.substr(0, space), quota) || !ParseCount(cpu_max.substr(space + 1), period)) {
    return std::nullopt;
  }
  if (quota == 0 || period == 0) return std::nullopt;
  return static_cast<std::size_t>(std::max(1ull, quota / period + (quota % period ? 1 : 0)));
}

std::size_t UsableCpus() {
  std::size_t cpus = AffinityCpus().value_or(std::max(1u, std::thread::hardware_concurrency()));
  std::string cgroup = OwnCgroup();
  if (!cgroup.empty() && cgroup.size() < 4096 && cgroup.find("..") == std::string::npos) {
    if (auto quota = CpusOfQuota(ReadSmallFile("/sys/fs/cgroup" + cgroup + "/cpu.max"))) {
      cpus = std::min(cpus, *quota);
    }
  }
  return std::max<std::size_t>(1, cpus);
}

}  // namespace cincinnati::env
