#include "fleet/answer_digest.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <numeric>

namespace cincinnati::fleet {
namespace {

constexpr size_t kMaxNodes = 100'000;
constexpr size_t kMaxEdges = 1'000'000;

Status Bad(std::string_view what) { return Status::InvalidArgument(fmt::format("graph answer: {}", what)); }

}  // namespace

Result<uint16_t> VersionTable::Intern(std::string_view name) {
  if (auto it = index_.find(std::string(name)); it != index_.end()) return it->second;
  if (names_.size() >= kNoVersion - 1) return Status::TooLarge("more than 65,534 distinct versions");
  auto parsed = Version::Parse(name);
  if (!parsed.ok()) return parsed.status();
  const auto v = static_cast<uint16_t>(names_.size());
  names_.emplace_back(name);
  versions_.push_back(std::move(parsed).value());
  index_.emplace(std::string(name), v);
  return v;
}

uint16_t VersionTable::Find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? kNoVersion : it->second;
}

std::vector<uint16_t> VersionTable::Sorted() const {
  std::vector<uint16_t> out(names_.size());
  std::iota(out.begin(), out.end(), uint16_t{0});
  std::sort(out.begin(), out.end(), [this](uint16_t a, uint16_t b) { return Newer(b, a); });
  return out;
}

Result<std::shared_ptr<const AnswerDigest>> DigestAnswer(std::string_view json, VersionTable& versions) {
  thread_local simdjson::dom::parser parser;
  simdjson::padded_string padded(json.data(), json.size());
  simdjson::dom::object top;
  if (auto err = parser.parse(padded).get(top)) return Bad(simdjson::error_message(err));
  simdjson::dom::array nodes, edges;
  if (top["nodes"].get(nodes) || top["edges"].get(edges)) return Bad("no 'nodes' or 'edges' array");
  if (nodes.size() > kMaxNodes || edges.size() > kMaxEdges) return Status::TooLarge("graph answer: too many nodes or edges");
  std::vector<uint16_t> index;
  index.reserve(nodes.size());
  for (simdjson::dom::element node : nodes) {
    std::string_view name;
    if (node["version"].get(name)) return Bad("a node without a 'version' string");
    CINCINNATI_ASSIGN_OR_RETURN(uint16_t v, versions.Intern(name));
    index.push_back(v);
  }
  auto digest = std::make_shared<AnswerDigest>();
  digest->nodes = index;
  digest->newest.assign(versions.size(), kNoVersion);
  for (simdjson::dom::element edge : edges) {
    simdjson::dom::array pair;
    uint64_t from = 0, to = 0;
    if (edge.get(pair) || pair.size() != 2 || pair.at(0).get(from) || pair.at(1).get(to) || from >= index.size() ||
        to >= index.size()) {
      return Bad("an edge that is not a pair of node indices");
    }
    uint16_t& best = digest->newest[index[from]];
    if (best == kNoVersion || versions.Newer(index[to], best)) best = index[to];
  }
  return std::shared_ptr<const AnswerDigest>(std::move(digest));
}

std::shared_ptr<const AnswerDigest> AnswerCache::Find(std::string_view etag) const {
  if (etag.empty()) return nullptr;
  auto it = map_.find(std::string(etag));
  return it == map_.end() ? nullptr : it->second;
}

void AnswerCache::Put(std::string etag, std::shared_ptr<const AnswerDigest> digest) {
  ++parsed_;
  if (etag.empty()) return;
  if (map_.size() >= capacity_) map_.clear();
  map_.emplace(std::move(etag), std::move(digest));
}

}  // namespace cincinnati::fleet
