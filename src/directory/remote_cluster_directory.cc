#include "directory/remote_cluster_directory.h"

#include <fmt/format.h>
#include <simdjson.h>

#include "core/status.h"
#include "http/client.h"
#include "directory/cluster_json.h"

namespace cincinnati::directory {

Result<ClusterInfo> ParseClusterInfoJson(const std::string& body) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(body);
  simdjson::dom::element doc;
  if (auto err = parser.parse(padded).get(doc)) {
    return Status::InvalidArgument(fmt::format("invalid JSON: {}", simdjson::error_message(err)));
  }
  return ClusterInfoFromJson(doc, "");
}

RemoteClusterDirectory::RemoteClusterDirectory(RemoteDirectoryOptions options) : options_(std::move(options)) {
  while (!options_.base_url.empty() && options_.base_url.back() == '/') options_.base_url.pop_back();
}

std::optional<DirectoryAnswer> RemoteClusterDirectory::Quick(std::string_view raw_id) {
  std::string id = NormalizeClusterId(raw_id);
  auto now = options_.clock->Steady();
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = cache_.find(id); it != cache_.end() && it->second.expires > now) {
    DirectoryAnswer answer = it->second.answer;
    answer.from_cache = true;
    return answer;
  }
  if (now < down_until_) return DirectoryAnswer::Failed("cluster directory unavailable (backing off): " + last_error_);
  return std::nullopt;
}

DirectoryAnswer RemoteClusterDirectory::Lookup(std::string_view raw_id) {
  if (auto quick = Quick(raw_id)) return *quick;
  std::string id = NormalizeClusterId(raw_id);
  std::string url = options_.base_url + "/clusters/" + id;
  for (char c : id) {
    bool safe = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_' || c == '~';
    if (!safe) return DirectoryAnswer::Unknown();  // no directory can know such an id; do not build a URL from it
  }
  http::Result r = http::Get(url, {.headers = {"Accept: application/json"}, .timeout = options_.timeout});
  auto now = options_.clock->Steady();
  DirectoryAnswer answer;
  if (!r.error.empty()) {
    answer = DirectoryAnswer::Failed(fmt::format("{}: {}", url, r.error));
  } else if (r.status == 404) {
    answer = DirectoryAnswer::Unknown();
  } else if (r.status != 200) {
    answer = DirectoryAnswer::Failed(fmt::format("{}: HTTP {}", url, r.status));
  } else if (auto info = ParseClusterInfoJson(r.body); !info.ok()) {
    answer = DirectoryAnswer::Failed(fmt::format("{}: {}", url, info.status().message()));
  } else {
    answer = DirectoryAnswer::Found(std::move(info).value());
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (answer.kind == DirectoryAnswer::Kind::kFailed) {
    down_until_ = now + options_.failure_backoff;
    last_error_ = answer.error;
  } else {
    down_until_ = {};
    Store(id, answer, now);
  }
  return answer;
}

void RemoteClusterDirectory::Store(const std::string& id, const DirectoryAnswer& answer, Time now) {
  if (options_.max_entries == 0) return;
  if (cache_.size() >= options_.max_entries) {
    for (auto it = cache_.begin(); it != cache_.end();) it = it->second.expires <= now ? cache_.erase(it) : std::next(it);
    // Still full: drop an eighth, arbitrary (hash order), to make room in bulk.
    for (size_t n = cache_.size() >= options_.max_entries ? std::max<size_t>(1, cache_.size() / 8) : 0; n > 0; --n) {
      cache_.erase(cache_.begin());
    }
  }
  auto ttl = answer.kind == DirectoryAnswer::Kind::kFound ? options_.ttl : options_.negative_ttl;
  cache_[id] = Entry{answer, now + ttl};
}

size_t RemoteClusterDirectory::cached() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cache_.size();
}

}  // namespace cincinnati::directory
