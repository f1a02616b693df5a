// libgit2's functions the project calls (the graph-data source from git), loaded on
// first use (env/shared_library.h).
#include <git2.h>

#include "on_demand/forward.h"

namespace {
constinit cincinnati::env::SharedLibrary libgit2("libgit2.so.1.5", "libgit2-1.5");
}  // namespace

CINCINNATI_FORWARD(libgit2, int, git_libgit2_init, (void), ())
CINCINNATI_FORWARD(libgit2, const git_error*, git_error_last, (void), ())
CINCINNATI_FORWARD(libgit2, void, git_buf_dispose, (git_buf * buffer), (buffer))
CINCINNATI_FORWARD(libgit2, int, git_clone,
                   (git_repository * *out, const char* url, const char* local_path, const git_clone_options* options),
                   (out, url, local_path, options))
CINCINNATI_FORWARD(libgit2, int, git_repository_open, (git_repository * *out, const char* path), (out, path))
CINCINNATI_FORWARD(libgit2, void, git_repository_free, (git_repository * repository), (repository))
CINCINNATI_FORWARD(libgit2, int, git_repository_set_head_detached, (git_repository * repository, const git_oid* commit),
                   (repository, commit))
CINCINNATI_FORWARD(libgit2, int, git_revparse_single, (git_object * *out, git_repository* repository, const char* spec),
                   (out, repository, spec))
CINCINNATI_FORWARD(libgit2, int, git_checkout_tree,
                   (git_repository * repository, const git_object* treeish, const git_checkout_options* options),
                   (repository, treeish, options))
CINCINNATI_FORWARD(libgit2, void, git_object_free, (git_object * object), (object))
CINCINNATI_FORWARD(libgit2, const git_oid*, git_object_id, (const git_object* object), (object))
CINCINNATI_FORWARD(libgit2, char*, git_oid_tostr, (char* out, size_t size, const git_oid* id), (out, size, id))
CINCINNATI_FORWARD(libgit2, int, git_remote_lookup, (git_remote * *out, git_repository* repository, const char* name),
                   (out, repository, name))
CINCINNATI_FORWARD(libgit2, int, git_remote_fetch,
                   (git_remote * remote, const git_strarray* refspecs, const git_fetch_options* options, const char* reflog_message),
                   (remote, refspecs, options, reflog_message))
CINCINNATI_FORWARD(libgit2, int, git_remote_default_branch, (git_buf * out, git_remote* remote), (out, remote))
CINCINNATI_FORWARD(libgit2, void, git_remote_free, (git_remote * remote), (remote))
