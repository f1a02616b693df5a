#include "server/graph_generation.h"

#include <algorithm>
#include <charconv>
#include <chrono>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "env/file_system.h"

namespace cincinnati::server {

Result<std::unique_ptr<GraphGeneration>> GraphGeneration::Open(std::string state_file, env::Clock& clock) {
  std::unique_ptr<GraphGeneration> g(new GraphGeneration(state_file, clock));
  if (state_file.empty()) return g;
  auto text = env::ReadFile(state_file, 4096);
  if (!text.ok()) {
    if (text.status().code() == Status::Code::kNotFound) return g;  // a first start
    return text.status();
  }
  // "<generation> <hash>\n"
  const std::string& t = *text;
  const size_t space = t.find(' ');
  uint64_t number = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + std::min(space, t.size()), number);
  if (space == std::string::npos || ec != std::errc() || end != t.data() + space) {
    return Status::InvalidArgument(fmt::format("{}: not '<generation> <hash>'; remove it only if no agent checks signatures", state_file));
  }
  g->last_ = number;
  g->last_hash_ = t.substr(space + 1, t.find('\n', space) - space - 1);
  return g;
}

std::unique_ptr<GraphGeneration> GraphGeneration::InMemory(env::Clock& clock) {
  return std::unique_ptr<GraphGeneration>(new GraphGeneration("", clock));
}

uint64_t GraphGeneration::For(std::string_view hash) {
  std::lock_guard lock(mu_);
  if (last_ != 0 && hash == last_hash_) return last_;
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(clock_.Now().time_since_epoch()).count();
  const uint64_t next = std::max<uint64_t>(last_ + 1, static_cast<uint64_t>(std::max<int64_t>(0, now_ms)));
  if (!state_file_.empty()) {
    if (Status st = env::WriteFileDurably(state_file_, fmt::format("{} {}\n", next, hash)); !st.ok()) {
      spdlog::error("graph generation {} not kept: {} (a restart with the clock set back would number graphs lower)", next,
                    st.message());
    }
  }
  last_ = next;
  last_hash_ = std::string(hash);
  return next;
}

}  // namespace cincinnati::server
