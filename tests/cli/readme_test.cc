// The documentation test: every `build/cincinnati ...` command of README.md,
// examples/README.md and the pages of docs/ runs as written, in order (page by page),
// from a directory laid out like a checkout (build/cincinnati, examples/). A command that
// needs a running service or a cluster's state says so in its block: a first line
// `# not run by the doc test: WHY` (the whole block), or that comment at the end of the
// command's own line. Every other command runs, bounded by a timeout, so that a new
// command that cannot run here fails the test until its block says why.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cctype>
#include <cstdlib>
#include <optional>
#include <regex>
#include <set>
#include <string_view>

#include "test_util.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kNotRun = "# not run by the doc test:";
constexpr int kCommandTimeoutSecs = 120;

struct DocCommand {
  std::string line;    // the command, continuation lines joined
  std::string not_run; // why it does not run here (the marker's text), or empty
};

// The marker's reason when `text` carries one ("" for a marker with no reason), or nothing.
std::optional<std::string> NotRunReason(std::string_view text) {
  const size_t at = text.find(kNotRun);
  if (at == std::string_view::npos) return std::nullopt;
  std::string why(text.substr(at + kNotRun.size()));
  why.erase(0, why.find_first_not_of(' '));
  return why;
}

// The `build/cincinnati` commands of one code block, with the block's or the line's marker.
void BlockCommands(std::string body, std::vector<DocCommand>& out, std::vector<std::string>& stale_markers) {
  for (size_t at = body.find("\\\n"); at != std::string::npos; at = body.find("\\\n", at)) body.replace(at, 2, " ");
  std::optional<std::string> block_reason;
  bool first = true, any = false;
  size_t start = 0;
  while (start < body.size()) {
    size_t end = body.find('\n', start);
    std::string line = body.substr(start, end == std::string::npos ? std::string::npos : end - start);
    start = end == std::string::npos ? body.size() : end + 1;
    line.erase(0, line.find_first_not_of(' '));
    if (first && line.rfind(kNotRun, 0) == 0) block_reason = NotRunReason(line);
    first = false;
    if (line.rfind("build/cincinnati ", 0) != 0) continue;
    any = true;
    const std::optional<std::string> own = NotRunReason(line);
    out.push_back({line, own ? (own->empty() ? "?" : *own) : block_reason ? (block_reason->empty() ? "?" : *block_reason) : ""});
  }
  if (block_reason && !any) stale_markers.push_back(body.substr(0, body.find('\n')));
}

// The commands of a Markdown file's code blocks; `stale_markers` gets the blocks that are
// marked but hold no command.
std::vector<DocCommand> Commands(const fs::path& markdown, std::vector<std::string>* stale_markers = nullptr) {
  const std::string text = testing::ReadFile(markdown);
  std::vector<DocCommand> out;
  std::vector<std::string> stale;
  static const std::regex block("```[a-z]*\\n([\\s\\S]*?)```");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), block); it != std::sregex_iterator(); ++it) {
    BlockCommands((*it)[1], out, stale);
  }
  if (stale_markers) *stale_markers = std::move(stale);
  return out;
}

// The marker is read where the page puts it: as the block's first line, or at the end of
// one command's line; a marker with no reason is no reason.
TEST(ReadmeMarkerTest, ABlockOrALineSaysWhyItDoesNotRun) {
  testing::TempDir dir;
  testing::WriteFile(dir / "page.md",
                     "```\n# not run by the doc test: needs a cluster\nbuild/cincinnati agent --a \\\n  --b\n```\n"
                     "```sh\n  build/cincinnati path --x\n  build/cincinnati explain --url U   # not run by the doc test: a service\n```\n"
                     "```\n# not run by the doc test:\nbuild/cincinnati serve\n```\n"
                     "```\n# not run by the doc test: nothing here\ncurl -s U\n```\n");
  std::vector<std::string> stale;
  const std::vector<DocCommand> commands = Commands(dir / "page.md", &stale);
  ASSERT_EQ(commands.size(), 4u);
  EXPECT_EQ(commands[0].line, "build/cincinnati agent --a    --b");
  EXPECT_EQ(commands[0].not_run, "needs a cluster");
  EXPECT_EQ(commands[1].not_run, "");
  EXPECT_EQ(commands[2].not_run, "a service");
  EXPECT_EQ(commands[3].not_run, "?");
  EXPECT_EQ(stale, std::vector<std::string>{"# not run by the doc test: nothing here"});
}

// Runs `command` in `checkout` under a timeout (its stdout and stderr to out.txt, err.txt);
// the shell's exit status, 124 when it timed out.
int RunBounded(const fs::path& checkout, const std::string& command) {
  testing::WriteFile(checkout / "command.sh", command + "\n");
  const std::string shell = "cd " + checkout.string() + " && timeout --kill-after=10 " + std::to_string(kCommandTimeoutSecs) +
                            " bash command.sh > out.txt 2> err.txt";
  const int status = std::system(shell.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class ReadmeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ReadmeTest, EveryCommandRunsAsWrittenOrItsBlockSaysWhyNot) {
  const fs::path source = testing::Examples().parent_path();
  testing::TempDir checkout;
  fs::create_directories(checkout / "build");
  fs::create_symlink(CINCINNATI_BINARY, checkout / "build" / "cincinnati");
  fs::create_symlink(testing::Examples(), checkout / "examples");
  std::vector<std::string> stale;
  const std::vector<DocCommand> commands = Commands(source / GetParam(), &stale);
  ASSERT_FALSE(commands.empty()) << GetParam();
  for (const std::string& block : stale) {
    ADD_FAILURE() << GetParam() << ": a block marked '" << block << "' holds no command";
  }
  size_t ran = 0;
  for (const DocCommand& command : commands) {
    if (!command.not_run.empty()) {
      EXPECT_NE(command.not_run, "?") << GetParam() << ": the marker of `" << command.line << "` gives no reason";
      continue;
    }
    const int status = RunBounded(checkout.path(), command.line);
    EXPECT_EQ(status, 0) << GetParam() << ": " << command.line << "\n" << testing::ReadFile(checkout / "err.txt")
                         << (status == 124 ? "(still running after the timeout: a command that cannot run here needs its "
                                             "block to say why, '# not run by the doc test: WHY')"
                                           : "");
    ++ran;
  }
  // A page may hold only commands that cannot run here (each block says why); the
  // READMEs always have some that run here.
  if (GetParam().find("README") != std::string::npos) {
    EXPECT_GT(ran, 0u) << GetParam();
  }
}

// The README, the examples' README and every page of docs/ that has commands.
INSTANTIATE_TEST_SUITE_P(Docs, ReadmeTest,
                         ::testing::Values("README.md", "examples/README.md", "docs/insight.md",
                                           "docs/reports-and-brakes.md", "docs/signing.md", "docs/simulator.md",
                                           "docs/agent.md", "docs/operator.md"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

// Every page of docs/ with a `build/cincinnati` command is run above: a new page
// cannot go unchecked.
TEST(ReadmeTest, EveryDocsPageWithCommandsIsRun) {
  const fs::path source = testing::Examples().parent_path();
  const std::set<std::string> run = {"insight.md", "reports-and-brakes.md", "signing.md", "simulator.md",
                                     "agent.md", "operator.md"};
  for (const auto& entry : fs::directory_iterator(source / "docs")) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".md" || run.count(name)) continue;
    EXPECT_TRUE(Commands(entry.path()).empty()) << "docs/" << name << " has commands the documentation test does not run";
  }
}

// docs/layout.md's table names every folder of src/ (and of the top level it lists), and
// names none that is gone: a room added, moved or removed changes the table with it.
TEST(ReadmeLayoutTest, TheTableNamesEveryFolderOfSrcAndNoneThatIsGone) {
  const fs::path source = testing::Examples().parent_path();
  const std::string section = testing::ReadFile(source / "docs" / "layout.md");
  std::set<std::string> rows;
  static const std::regex row("\\n\\| `([^`]+?)/?` \\|");
  for (auto it = std::sregex_iterator(section.begin(), section.end(), row); it != std::sregex_iterator(); ++it) {
    rows.insert((*it)[1]);
  }
  ASSERT_FALSE(rows.empty()) << "no rows in docs/layout.md's table";
  for (const auto& entry : fs::directory_iterator(source / "src")) {
    if (!entry.is_directory()) continue;
    const std::string name = "src/" + entry.path().filename().string();
    EXPECT_TRUE(rows.count(name)) << name << " has no row in docs/layout.md's table";
  }
  for (const std::string& name : rows) {
    EXPECT_TRUE(fs::is_directory(source / name)) << "docs/layout.md's table names " << name << ", which is not a folder";
  }
}

}  // namespace
}  // namespace cincinnati
