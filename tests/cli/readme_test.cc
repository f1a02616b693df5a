// The documentation test: every `build/cincinnati ...` command of README.md,
// examples/README.md and the pages of docs/ runs as written, in order (page by page),
// from a directory laid out like a checkout (build/cincinnati, examples/). A command that needs a running service or a
// cluster's state is listed below with the test that covers it instead, so that a new
// README command cannot go unchecked.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <map>
#include <regex>
#include <set>

#include "test_util.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;

// Command prefix -> why it does not run here (and what covers it).
const std::map<std::string, std::string> kNeedsAService = {
    {"build/cincinnati explain --url", "asks a running service: InsightServeTest.TheCommandsAskARunningService"},
    {"build/cincinnati agent ", "polls a service and applies releases: agent_test (AgentProcessTest, UpdateTest)"},
    {"build/cincinnati adm ", "talks to a running agent: AgentAdmTest"},
    {"build/cincinnati upgrade-operator ", "a long-running fleet operator: OperatorE2ETest"},
    {"build/cincinnati upgrades ", "talks to a running operator: operator_test"},
    {"build/cincinnati serve ", "a long-running service: service_test (ReportServiceTest and others)"},
    {"build/cincinnati brakes ", "talks to a running service: ReportServiceTest"},
    {"build/cincinnati fleet simulate ", "a simulation of minutes: FleetSimulateTest"},
};

// The `build/cincinnati` commands of a Markdown file's code blocks, continuation lines joined.
std::vector<std::string> Commands(const fs::path& markdown) {
  const std::string text = testing::ReadFile(markdown);
  std::vector<std::string> out;
  static const std::regex block("```[a-z]*\\n([\\s\\S]*?)```");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), block); it != std::sregex_iterator(); ++it) {
    std::string body = (*it)[1];
    for (size_t at = body.find("\\\n"); at != std::string::npos; at = body.find("\\\n", at)) body.replace(at, 2, " ");
    size_t start = 0;
    while (start < body.size()) {
      size_t end = body.find('\n', start);
      std::string line = body.substr(start, end == std::string::npos ? std::string::npos : end - start);
      start = end == std::string::npos ? body.size() : end + 1;
      line.erase(0, line.find_first_not_of(' '));
      if (line.rfind("build/cincinnati ", 0) == 0) out.push_back(line);
    }
  }
  return out;
}

class ReadmeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ReadmeTest, EveryCommandRunsAsWritten) {
  const fs::path source = testing::Examples().parent_path();
  testing::TempDir checkout;
  fs::create_directories(checkout / "build");
  fs::create_symlink(CINCINNATI_BINARY, checkout / "build" / "cincinnati");
  fs::create_symlink(testing::Examples(), checkout / "examples");
  const std::vector<std::string> commands = Commands(source / GetParam());
  ASSERT_FALSE(commands.empty()) << GetParam();
  size_t ran = 0;
  for (const std::string& command : commands) {
    bool skipped = false;
    for (const auto& [prefix, why] : kNeedsAService) skipped = skipped || command.rfind(prefix, 0) == 0;
    if (skipped) continue;
    // Grouped, so that a redirection of the command itself (> gb.json) still applies.
    const std::string shell = "cd " + checkout.path().string() + " && { " + command + " ; } > out.txt 2> err.txt";
    const int status = std::system(shell.c_str());
    EXPECT_EQ(status, 0) << GetParam() << ": " << command << "\n" << testing::ReadFile(checkout / "err.txt");
    ++ran;
  }
  // A page may hold only commands that need a service (each names the test that covers
  // it); the READMEs always have some that run here.
  if (GetParam().find("README") != std::string::npos) EXPECT_GT(ran, 0u) << GetParam();
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
