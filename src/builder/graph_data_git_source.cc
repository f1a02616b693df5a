#include "builder/graph_data_git_source.h"

#include <git2.h>

#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "builder/graph_data_tarball.h"
#include "core/metadata_keys.h"
#include "env/file_system.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;

Status GitError(const std::string& what) {
  const git_error* e = git_error_last();
  return Status::IoError(fmt::format("{}: {}", what, e && e->message ? e->message : "unknown git error"));
}

template <typename T, void (*Free)(T*)>
using Owned = std::unique_ptr<T, std::integral_constant<decltype(Free), Free>>;

bool IsCommitId(const std::string& s) {
  return s.size() == 40 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

GraphDataGitSettings ParseGitSpec(const std::string& spec) {
  GraphDataGitSettings s;
  size_t hash = spec.rfind('#');
  s.url = spec.substr(0, hash);
  if (hash != std::string::npos) {
    std::string ref = spec.substr(hash + 1);
    if (IsCommitId(ref)) {
      s.reference_revision = ref;
    } else {
      s.reference_branch = ref;
    }
  }
  return s;
}

Result<Graph> GraphDataGitSource::Apply(Graph graph, TransformContext& context) const {
  static const int init = git_libgit2_init();  // once per process; never shut down
  (void)init;
  if (settings_.output_directory.empty()) return Status::InvalidArgument("output_directory is required");
  std::lock_guard<std::mutex> lock(mu_);
  const std::string repo_dir = (fs::path(settings_.output_directory) / "repository").string();

  git_repository* raw = nullptr;
  const bool cloned = git_repository_open(&raw, repo_dir.c_str()) != 0;
  if (cloned) {
    env::RemoveLeftover(env::DefaultFileSystem(), repo_dir, "a repository that does not open");
    if (Status made = env::DefaultFileSystem().CreateDirectories(settings_.output_directory); !made.ok()) return made;
    git_clone_options options = GIT_CLONE_OPTIONS_INIT;
    options.checkout_opts.checkout_strategy = GIT_CHECKOUT_NONE;
    if (git_clone(&raw, settings_.url.c_str(), repo_dir.c_str(), &options) != 0) {
      return GitError(fmt::format("cloning {}", settings_.url));
    }
  }
  Owned<git_repository, git_repository_free> repo(raw);
  git_remote* remote = nullptr;
  if (git_remote_lookup(&remote, repo.get(), "origin") != 0) return GitError("no remote 'origin'");
  Owned<git_remote, git_remote_free> origin(remote);
  // A fresh clone has fetched already, but this remote object has to have connected
  // once to know the remote's default branch.
  if (git_remote_fetch(remote, nullptr, nullptr, nullptr) != 0) return GitError(fmt::format("fetching {}", settings_.url));

  std::string wanted = settings_.reference_revision;
  if (wanted.empty()) {
    std::string branch = settings_.reference_branch;
    if (branch.empty()) {  // the remote's default branch (its HEAD), as `git clone` picks it
      git_buf head = GIT_BUF_INIT;
      if (git_remote_default_branch(&head, remote) != 0) {
        return GitError(fmt::format("{} names no default branch: give URL#BRANCH", settings_.url));
      }
      branch = std::string(head.ptr, head.size);
      git_buf_dispose(&head);
      if (branch.starts_with("refs/heads/")) branch.erase(0, std::string_view("refs/heads/").size());
    }
    wanted = "refs/remotes/origin/" + branch;
  }
  git_object* target = nullptr;
  if (git_revparse_single(&target, repo.get(), (wanted + "^{commit}").c_str()) != 0) {
    return GitError(fmt::format("{} has no {}", settings_.url, wanted));
  }
  Owned<git_object, git_object_free> commit(target);
  char id[GIT_OID_HEXSZ + 1] = {0};
  git_oid_tostr(id, sizeof(id), git_object_id(target));
  const fs::path data = fs::path(repo_dir) / fs::path(settings_.graph_data_path).relative_path();

  if (id != last_commit_) {
    git_checkout_options checkout = GIT_CHECKOUT_OPTIONS_INIT;
    checkout.checkout_strategy = GIT_CHECKOUT_FORCE | GIT_CHECKOUT_REMOVE_UNTRACKED;
    if (git_checkout_tree(repo.get(), target, &checkout) != 0 ||
        git_repository_set_head_detached(repo.get(), git_object_id(target)) != 0) {
      return GitError(fmt::format("checking out {}", id));
    }
    CINCINNATI_ASSIGN_OR_RETURN(last_tar_, WriteGraphDataTarball(data.string(), settings_.output_directory,
                                                                 settings_.output_allowlist));
    context.diagnostics.Info(settings_.url, fmt::format("graph-data at {} ({})", id, wanted));
    last_commit_ = id;
  }
  context.parameters[std::string(kSecondaryMetadataDirectoryParam)] = data.string();
  context.parameters[std::string(kSecondaryMetadataTarParam)] = last_tar_;
  return graph;
}

PluginStep GraphDataGitSourceFromSettings(const PluginSettings& r) {
  CINCINNATI_RETURN_IF_ERROR(r.CheckKnown(
      {"url", "reference_branch", "reference_revision", "output_directory", "graph_data_path", "output_allowlist"}));
  GraphDataGitSettings s;
  s.url = r.Get("url", "");
  s.output_directory = r.Get("output_directory", "");
  if (s.url.empty() || s.output_directory.empty()) {
    return Status::InvalidArgument("plugin 'git-secondary-metadata-scrape': url and output_directory are required");
  }
  s.reference_branch = r.Get("reference_branch", s.reference_branch);
  s.reference_revision = r.Get("reference_revision", s.reference_revision);
  s.graph_data_path = r.Get("graph_data_path", s.graph_data_path);
  s.output_allowlist = r.List("output_allowlist", s.output_allowlist);
  return std::unique_ptr<GraphTransform>(std::make_unique<GraphDataGitSource>(s));
}

}  // namespace cincinnati
