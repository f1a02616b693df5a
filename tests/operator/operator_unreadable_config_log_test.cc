// An UpgradeConfig file that has never been read well is logged by the running
// operator as ignored until it can be read (there is no earlier config of the cluster
// to keep), naming the file and what is wrong in it; a file that breaks later is said
// of in the same words.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "operator/config_source.h"
#include "service_util.h"
#include "test_util.h"

namespace cincinnati::upgrade {
namespace {

using namespace std::chrono_literals;

// The log's lines that name `file` as ignored until it can be read.
size_t TimesIgnored(const std::string& log, const std::string& file) {
  size_t n = 0, start = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    const std::string_view line(log.data() + start, end - start);
    if (line.find(file) != line.npos && line.find("(ignored until it can be read)") != line.npos) ++n;
    start = end + 1;
  }
  return n;
}

// A config with a tab for indentation: YAML refuses it, so it never parses.
std::string BrokenConfig() {
  return "apiVersion: upgrade.managed.openshift.io/v1alpha1\nkind: UpgradeConfig\nspec:\n\ttype: OSD\n";
}

TEST(OperatorUnreadableConfigLogTest, AConfigThatNeverParsedIsLoggedAsIgnoredUntilItCanBeRead) {
  testing::TempDir dir;
  testing::WriteFile(dir / "fleet.yaml",
                     "clusters:\n- {name: alpha, agent: \"http://127.0.0.1:1\"}\n- {name: beta, agent: \"http://127.0.0.1:1\"}\n");
  testing::WriteFile(dir / "configs" / "alpha.yaml", BrokenConfig());
  testing::ServiceProcess op("upgrade-operator", {"--fleet", (dir / "fleet.yaml").string(), "--state-dir",
                                                  (dir / "state").string(), "--configs", (dir / "configs").string(),
                                                  "--port", "0"});
  ASSERT_TRUE(op.running()) << op.log();
  const std::string alpha = (dir / "configs" / "alpha.yaml").string();
  const auto said = [&](const std::string& file) { return TimesIgnored(op.log(), file) > 0; };
  ASSERT_TRUE(testing::WaitFor([&] { return said(alpha); }, 60s)) << op.log();
  EXPECT_NE(op.log().find("line 4"), std::string::npos) << op.log();
  EXPECT_EQ(op.log().find("the cluster's previous config stays"), std::string::npos) << op.log();

  // A second broken file, written while the operator runs: the same words, its own name.
  // (How often a file is said of while it is still being written is not checked: the
  // operator reads a file again until it is two seconds old.)
  const std::string beta = (dir / "configs" / "beta.yaml").string();
  testing::WriteFile(beta, BrokenConfig());
  ASSERT_TRUE(testing::WaitFor([&] { return said(beta); }, 60s)) << op.log();
  EXPECT_EQ(op.log().find("the cluster's previous config stays"), std::string::npos) << op.log();
}

// A file younger than two seconds is read again on every pass (it may still be being
// written); while it and its error stay the same, the error is said once, not once a
// pass. A change to the file is said again.
TEST(OperatorUnreadableConfigLogTest, AYoungBrokenFileIsSaidOncePerChange) {
  testing::TempDir dir;
  const std::string file = (dir / "alpha.yaml").string();
  testing::WriteFile(file, BrokenConfig());
  std::ostringstream out;
  auto logger = std::make_shared<spdlog::logger>("configs", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
  logger->set_pattern("%v");
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(logger);
  LocalConfigSource source(dir.path().string());
  for (int pass = 0; pass < 3; ++pass) EXPECT_TRUE(source.Read().keep_unlisted);
  const size_t once = TimesIgnored(out.str(), file);
  testing::WriteFile(file, "spec: [");
  for (int pass = 0; pass < 3; ++pass) source.Read();
  spdlog::set_default_logger(previous);
  EXPECT_EQ(once, 1u) << out.str();
  EXPECT_EQ(TimesIgnored(out.str(), file), 2u) << out.str();
}

}  // namespace
}  // namespace cincinnati::upgrade
