#include "insight/builder_records.h"

#include <algorithm>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <re2/re2.h>

#include "core/strings.h"

namespace cincinnati::insight {
namespace {

// A release's blocked-edges records with their regexes compiled once.
class CompiledBlocks {
 public:
  explicit CompiledBlocks(const Metadata& metadata, const std::string& blocked_key) {
    auto it = metadata.find(blocked_key);
    if (it == metadata.end()) return;
    auto records = DecodeBlockRecords(it->second);
    if (!records.ok()) return;
    for (BlockRecord& r : *records) {
      auto re = std::make_unique<RE2>(r.from_regex, RE2::Quiet);
      rules_.emplace_back(std::move(r), std::move(re));
    }
  }
  // The rules whose regex matches `source` (a builder graph version), as edge-add-remove matched.
  std::vector<BlockRecord> Matching(const std::string& source) const {
    std::vector<BlockRecord> out;
    for (const auto& [record, re] : rules_) {
      if (record.from_regex == ".*" || (re->ok() && RE2::PartialMatch(source, *re))) out.push_back(record);
    }
    return out;
  }

 private:
  std::vector<std::pair<BlockRecord, std::unique_ptr<RE2>>> rules_;
};

}  // namespace

std::optional<NodeIndex> FindRelease(const Graph& graph, std::string_view version, std::string_view arch) {
  if (auto exact = graph.Find(version)) return exact;
  if (arch.empty()) return std::nullopt;
  return graph.Find(fmt::format("{}+{}", version, arch));
}

std::string ViewVersion(std::string_view version, std::string_view arch) {
  std::string suffix = fmt::format("+{}", arch);
  if (!arch.empty() && version.ends_with(suffix)) version.remove_suffix(suffix.size());
  return std::string(version);
}

std::string EdgeRemoval::Describe() const {
  if (cause == kPreviousRemoveRegexSuffix) {
    if (blocks.empty()) return fmt::format("removed by the previous.remove_regex of {} (release metadata)", to);
    std::string files;
    for (const BlockRecord& b : blocks) {
      files += fmt::format("{}{} (from: {})", files.empty() ? "" : ", ", b.file, b.from_regex);
    }
    return "blocked by " + files;
  }
  if (cause == kPreviousRemoveSuffix) return fmt::format("removed by the previous.remove of {} (release metadata)", to);
  if (cause == kNextRemoveSuffix) return fmt::format("removed by the next.remove of {} (release metadata)", from);
  return fmt::format("removed by {}", cause);
}

BuilderRecords::BuilderRecords(const Graph& builder_graph, std::string arch, std::string key_prefix)
    : graph_(builder_graph),
      arch_(std::move(arch)),
      blocked_key_(PrefixedKey(key_prefix, kBlockedBySuffix)),
      removed_key_(PrefixedKey(key_prefix, kRemovedPreviousSuffix)),
      removed_next_key_(PrefixedKey(key_prefix, kRemovedNextSuffix)) {}

bool BuilderRecords::ThisArch(const Node& node) const {
  return node.version.find('+') == std::string::npos || node.version.ends_with("+" + arch_);
}

std::vector<EdgeRemoval> BuilderRecords::RemovalsIntoNode(const Node& node) const {
  std::vector<EdgeRemoval> out;
  auto it = node.metadata.find(removed_key_);
  if (it == node.metadata.end() || !ThisArch(node)) return out;
  auto edges = DecodeRemovedEdges(it->second);
  if (!edges.ok()) return out;
  std::optional<CompiledBlocks> blocks;  // compiled on the first edge that needs them
  for (const RemovedEdge& e : *edges) {
    EdgeRemoval removal{ViewVersion(e.from, arch_), ViewVersion(node.version, arch_), e.cause, {}};
    if (e.cause == kPreviousRemoveRegexSuffix) {
      if (!blocks) blocks.emplace(node.metadata, blocked_key_);
      auto source = FindRelease(graph_, removal.from, arch_);
      removal.blocks = blocks->Matching(source ? graph_.node(*source).version : e.from);
    }
    out.push_back(std::move(removal));
  }
  return out;
}

const std::vector<EdgeRemoval>& BuilderRecords::removals() const {
  std::call_once(all_once_, [this] {
    for (const Node& node : graph_.nodes()) {
      for (EdgeRemoval& r : RemovalsIntoNode(node)) all_.push_back(std::move(r));
    }
  });
  return all_;
}

std::vector<EdgeRemoval> BuilderRecords::RemovalsInto(std::string_view to) const {
  auto target = FindRelease(graph_, to, arch_);
  return target ? RemovalsIntoNode(graph_.node(*target)) : std::vector<EdgeRemoval>();
}

std::optional<EdgeRemoval> BuilderRecords::Removal(std::string_view from, std::string_view to) const {
  for (EdgeRemoval& r : RemovalsInto(to)) {
    if (r.from == from) return std::move(r);
  }
  return std::nullopt;
}

std::vector<BlockRecord> BuilderRecords::BlocksMatching(std::string_view from, std::string_view to) const {
  auto target = FindRelease(graph_, to, arch_);
  if (!target) return {};
  // The rules are matched against the version as the builder graph names it, as
  // edge-add-remove did.
  auto source = FindRelease(graph_, from, arch_);
  return CompiledBlocks(graph_.node(*target).metadata, blocked_key_)
      .Matching(source ? graph_.node(*source).version : std::string(from));
}

bool BuilderRecords::RemovedRelease(std::string_view version) const {
  std::call_once(removed_releases_once_, [this] {
    for (const Node& node : graph_.nodes()) {
      if (!ThisArch(node)) continue;
      if (auto it = node.metadata.find(removed_next_key_); it != node.metadata.end()) {
        for (std::string_view v : Split(it->second, ',')) {
          removed_releases_.push_back(ViewVersion(TrimWhitespace(v), arch_));
        }
      }
    }
    std::sort(removed_releases_.begin(), removed_releases_.end());
  });
  return std::binary_search(removed_releases_.begin(), removed_releases_.end(), version);
}

}  // namespace cincinnati::insight
