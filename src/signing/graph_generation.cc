#include "signing/graph_generation.h"

#include <algorithm>
#include <charconv>
#include <chrono>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/answer_signature.h"
#include "core/date_time.h"
#include "core/strings.h"
#include "env/file_system.h"

namespace cincinnati::server {
namespace {

constexpr int64_t kMaxLeadMs = static_cast<int64_t>(kMaxGenerationLead) * 1000;

bool ParseNumber(std::string_view text, uint64_t& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

// The file: "<generation> <hash>[ <given-up number>]\n".
Result<std::unique_ptr<GraphGeneration>> GraphGeneration::Open(std::string state_file, env::Clock& clock) {
  std::unique_ptr<GraphGeneration> g(new GraphGeneration(state_file, clock));
  if (state_file.empty()) return g;
  auto text = env::ReadFile(state_file, 4096);
  if (!text.ok()) {
    if (text.status().code() == Status::Code::kNotFound) return g;  // a first start
    return text.status();
  }
  std::string_view line(*text);
  line = line.substr(0, line.find('\n'));
  const std::vector<std::string_view> fields = Split(line, ' ');
  if ((fields.size() != 2 && fields.size() != 3) || !ParseNumber(fields[0], g->last_) ||
      (fields.size() == 3 && !ParseNumber(fields[2], g->abandoned_))) {
    return Status::InvalidArgument(fmt::format("{}: not '<generation> <hash>'; remove it only if no agent checks signatures", state_file));
  }
  g->last_hash_ = std::string(fields[1]);
  g->last_given_ = g->last_;
  return g;
}

std::unique_ptr<GraphGeneration> GraphGeneration::InMemory(env::Clock& clock) {
  return std::unique_ptr<GraphGeneration>(new GraphGeneration("", clock));
}

int64_t GraphGeneration::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_.Now().time_since_epoch()).count();
}

uint64_t GraphGeneration::For(std::string_view hash) {
  std::lock_guard lock(mu_);
  const int64_t now_ms = std::max<int64_t>(0, NowMs());
  const uint64_t next = Next(hash, now_ms);
  if (next != last_ || hash != last_hash_) Keep(next, hash);
  last_given_ = next;
  return next;
}

uint64_t GraphGeneration::Next(std::string_view hash, int64_t now_ms) {
  const uint64_t cap = static_cast<uint64_t>(now_ms + kMaxLeadMs);
  if (last_ > cap) {
    ++given_up_;
    abandoned_ = std::max(abandoned_, last_);
    spdlog::error(
        "graph generation {} is {} s ahead of this clock ({}), more than the {} s a checker allows: it was numbered by a "
        "clock that was ahead (or this clock is behind now: then fix it). The graph is numbered {} now; an agent that took "
        "{} takes answers again once this clock passes that number, when the graph is numbered past it",
        last_, (last_ - static_cast<uint64_t>(now_ms)) / 1000, FormatUnixSeconds(now_ms / 1000), kMaxGenerationLead, cap, last_);
    return cap;
  }
  if (abandoned_ != 0 && static_cast<uint64_t>(now_ms) > abandoned_) {
    spdlog::warn("graph generation: this clock has passed {}, the number given up when it was ahead; numbered past it",
                 abandoned_);
    abandoned_ = 0;
    return std::max<uint64_t>(last_ + 1, static_cast<uint64_t>(now_ms));
  }
  if (last_ != 0 && hash == last_hash_) return last_;
  return std::max<uint64_t>(last_ + 1, static_cast<uint64_t>(now_ms));
}

void GraphGeneration::Keep(uint64_t number, std::string_view hash) {
  last_ = number;
  last_hash_ = std::string(hash);
  if (state_file_.empty()) return;
  const std::string line = abandoned_ != 0 ? fmt::format("{} {} {}\n", number, hash, abandoned_) : fmt::format("{} {}\n", number, hash);
  if (Status st = env::WriteFileDurably(state_file_, line); !st.ok()) {
    spdlog::error("graph generation {} not kept: {} (a restart with the clock set back would number graphs lower)", number,
                  st.message());
  }
}

double GraphGeneration::SecondsAhead() const {
  const int64_t ahead_ms = static_cast<int64_t>(last_given_.load()) - NowMs();
  return ahead_ms > 0 ? static_cast<double>(ahead_ms) / 1000 : 0;
}

}  // namespace cincinnati::server
