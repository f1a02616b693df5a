#include "operator/config_source.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "env/clock.h"
#include "env/file_system.h"
#include "operator/operator_config.h"

namespace cincinnati::upgrade {
namespace fs = std::filesystem;

bool SourceRead::Unreadable(const std::string& cluster) const {
  return std::find(unreadable.begin(), unreadable.end(), cluster) != unreadable.end() ||
         std::find(unreadable.begin(), unreadable.end(), "*") != unreadable.end();
}

SourceRead LocalConfigSource::Read() {
  SourceRead out;
  std::vector<fs::path> files;
  auto entries = env::DefaultFileSystem().ListDirectory(dir_);
  if (entries.ok()) {
    for (const env::DirectoryEntry& entry : *entries) {
      const std::string ext = entry.path.extension().string();
      if (ext == ".yaml" || ext == ".yml" || ext == ".json") files.push_back(entry.path);
    }
  }
  if (!entries.ok()) {
    spdlog::error("upgrade configs {}: {} (every cluster's config stays as it is)", dir_, entries.status().message());
    out.unreadable.push_back("*");
    return out;
  }
  std::sort(files.begin(), files.end());
  std::map<std::string, std::string> seen;  // file -> cluster, this read
  std::map<std::string, Parsed> parsed;
  for (const auto& file : files) {
    const std::string stem = file.stem().string();
    Parsed now;
    bool fresh_error = false;
    if (const env::FileInfo st = env::DefaultFileSystem().Stat(file); st.exists()) {
      now.inode = st.inode;
      now.size = st.size;
      now.mtime_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(st.modified.time_since_epoch()).count();
      now.ctime_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(st.changed.time_since_epoch()).count();
    }
    auto before = parsed_.find(file.string());
    if (before != parsed_.end() && before->second.settled && now.inode != 0 && before->second.inode == now.inode &&
        before->second.size == now.size && before->second.mtime_ns == now.mtime_ns && before->second.ctime_ns == now.ctime_ns) {
      now.config = before->second.config;
      now.settled = true;
    } else {
      // The real clock: the file system stamps the times it is compared with.
      const int64_t read_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(env::RealClock().Now().time_since_epoch()).count();
      now.settled = read_ns - std::max(now.mtime_ns, now.ctime_ns) > 2'000'000'000LL;
      auto text = env::ReadFile(file, kMaxUpgradeConfigFileBytes);
      now.config = std::make_shared<const Result<UpgradeConfig>>(text.ok() ? ParseUpgradeConfigYaml(*text, file.string())
                                                                            : Result<UpgradeConfig>(text.status()));
      // A young file is read again on every pass until it settles: what it says is said
      // again only when the file or its error changed.
      const bool same_file = before != parsed_.end() && before->second.inode == now.inode && before->second.size == now.size &&
                             before->second.mtime_ns == now.mtime_ns && before->second.ctime_ns == now.ctime_ns;
      const bool said = same_file && before->second.config && !before->second.config->ok() && !now.config->ok() &&
                        before->second.config->status().message() == now.config->status().message();
      fresh_error = !now.config->ok() && !said;
    }
    const Result<UpgradeConfig>& config = *parsed.emplace(file.string(), std::move(now)).first->second.config;
    if (!config.ok()) {
      out.unreadable.push_back(stem);
      std::string cluster = stem;
      auto known = file_clusters_.find(file.string());
      if (known != file_clusters_.end()) {
        out.unreadable.push_back(known->second);
        seen[file.string()] = cluster = known->second;
      } else {
        out.keep_unlisted = true;
      }
      // Said once per change of the file; a file never read well had no config to keep.
      if (fresh_error) {
        spdlog::error("{} ({})", config.status().message(),
                      known != file_clusters_.end() ? "the cluster's previous config stays"
                                                    : "ignored until it can be read");
      }
      out.problems[cluster] = config.status().message();
      continue;
    }
    const std::string cluster = config->cluster.empty() ? stem : config->cluster;
    seen[file.string()] = cluster;
    if (!out.specs.emplace(cluster, config->spec).second) {
      spdlog::error("{}: a second config for cluster {} is ignored", file.string(), cluster);
    }
  }
  file_clusters_ = std::move(seen);
  parsed_ = std::move(parsed);
  return out;
}

SourceRead OcmConfigSource::Read() {
  const auto now = clock_.Steady();
  if (next_ && now < *next_) {
    SourceRead again = last_;
    again.refreshed = false;
    return again;
  }
  last_ = ReadNow();
  next_ = now + interval_;
  return last_;
}

SourceRead OcmConfigSource::ReadNow() {
  SourceRead out;
  for (const std::string& name : clusters_) {
    auto fail = [&](const Status& s) {
      spdlog::warn("cluster {}: the upgrade-policy service: {} (its config stays as it is)", name, s.message());
      out.unreadable.push_back(name);
      out.problems[name] = "the upgrade-policy service: " + s.message();
    };
    auto id = cluster_id_(name);
    if (!id.ok()) {
      fail(id.status());
      continue;
    }
    auto remote = service_.FindCluster(*id);
    if (!remote.ok()) {
      fail(remote.status());
      continue;
    }
    auto policies = service_.Policies(remote->id);
    if (!policies.ok()) {
      fail(policies.status());
      continue;
    }
    auto policy = ActionablePolicy(*policies);
    if (!policy) continue;  // nothing to do: an existing config goes
    index_.Set(name, remote->id, policy->id);
    out.specs[name] = SpecFromPolicy(*remote, *policy, type_);
  }
  return out;
}

}  // namespace cincinnati::upgrade
