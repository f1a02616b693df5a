// Helpers for tests: fixture paths, temporary directories, small graph builders.
#pragma once

#include <fcntl.h>
#include <sys/wait.h>

#include <cstdlib>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "builder/pipeline.h"
#include "core/graph.h"

namespace cincinnati::testing {

inline std::filesystem::path Fixtures() { return CINCINNATI_FIXTURES; }
// OpenShift's graph-data at one revision (December 2022), from the shared fixtures.
inline std::filesystem::path FixtureGraphData() {
  return Fixtures() / "graph-data-134475077ed4eeaedf3c339f12915b9cdaf7d194";
}
inline std::filesystem::path Examples() { return CINCINNATI_EXAMPLES; }

// The graph builder's local chain: `releases` (a directory of release documents or a
// graph JSON file) with the graph-data tree `graph_data`.
inline Result<Graph> BuildLocal(const std::filesystem::path& releases, const std::filesystem::path& graph_data) {
  LocalBuildOptions options;
  options.releases = releases;
  options.graph_data = graph_data;
  TransformContext context;
  return BuildLocalGraph(options, context);
}

// A directory under the system temp dir, removed when the object dies.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("cincinnati-test-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& rel) const { return path_ / rel; }

 private:
  std::filesystem::path path_;
};

inline void WriteFile(const std::filesystem::path& path, const std::string& content) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << content;
}

// The file's bytes ("" when it cannot be opened; what was read when a read fails). Total:
// a /proc file of a process that ends mid-read fails with ESRCH, which libstdc++'s
// filebuf would throw as an exception through an istreambuf_iterator.
inline std::string ReadFile(const std::filesystem::path& path) {
  std::string out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buffer[65536];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof(buffer))) > 0;) out.append(buffer, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

// Adds concrete nodes "<i>.0.0" for i in [0, n) with payload "image/<version>".
inline Graph NumberedGraph(int n) {
  Graph g;
  for (int i = 0; i < n; ++i) {
    std::string v = std::to_string(i) + ".0.0";
    g.AddNode(Node::Concrete(v, "image/" + v)).value();
  }
  return g;
}

// Edges as "from->to" strings, sorted, for order-insensitive comparison.
inline std::vector<std::string> EdgeStrings(const Graph& g) {
  std::vector<std::string> out;
  for (const Edge& e : g.Edges()) out.push_back(g.node(e.from).version + "->" + g.node(e.to).version);
  std::sort(out.begin(), out.end());
  return out;
}

struct ProcessResult {
  int exit_code;
  std::string out;
  std::string err;
};

// Runs `cincinnati ARGS` (a shell command line) to completion, stdin from `stdin_file`
// or /dev/null, and returns its exit code and output.
inline ProcessResult RunCincinnati(const std::string& args, const std::string& stdin_file = "") {
  TempDir tmp;
  std::string cmd = std::string(CINCINNATI_BINARY) + " " + args + " >" + (tmp / "out").string() + " 2>" +
                    (tmp / "err").string() + (stdin_file.empty() ? " </dev/null" : " <" + stdin_file);
  int status = std::system(cmd.c_str());
  return ProcessResult{WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadFile(tmp / "out"), ReadFile(tmp / "err")};
}

}  // namespace cincinnati::testing
