// One clock type: outside src/env, code reads the time only through an env::Clock (an
// injected one, or env::RealClock() where nothing can be given), so that tests and
// simulations control every TTL, deadline and schedule. This test reads every .h/.cc
// under src/ outside src/env and fails, naming file:line, on a direct read of the
// system's clocks. Latency timers (code that only measures how long something took,
// for a metric or a log line) are allowed in the few files listed below, each up to
// the number of reads it has.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "test_util.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;

struct Allowed {
  const char* file;  // relative to src/
  int reads;         // at most this many
  const char* reason;
};

const Allowed kAllowed[] = {
    {"graph_builder/graph_builder_service.cc", 4,
     "how long a refresh and a republish took: the scrape-duration metrics and the log line"},
    {"policy_engine/answer_service.cc", 2, "how long precomputing a graph's answers took (log)"},
    {"policy_engine/policy_engine_service.cc", 2, "how long an answer took (serve-duration metric)"},
    {"operator/upgrade_operator_passes.cc", 2, "how long a reconcile pass took: the pass-duration metric"},
    {"fleet/fleet_http.cc", 2, "how long each simulated request took: the simulation's latency figures"},
    {"fleet/simulation.cc", 2, "how long the whole simulation took in real time: its real_seconds figure"},
};

// The text with comments and string and character literals blanked out, newlines kept
// (so that line numbers hold): a clock named in a comment or a message is no read.
std::string Code(std::string_view text) {
  std::string out(text);
  size_t i = 0;
  const size_t n = text.size();
  auto blank = [&](size_t from, size_t to) {
    for (size_t k = from; k < to && k < n; ++k) {
      if (out[k] != '\n') out[k] = ' ';
    }
  };
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  while (i < n) {
    if (text.compare(i, 2, "//") == 0) {
      size_t end = text.find('\n', i);
      if (end == std::string_view::npos) end = n;
      blank(i, end);
      i = end;
    } else if (text.compare(i, 2, "/*") == 0) {
      size_t end = text.find("*/", i + 2);
      end = end == std::string_view::npos ? n : end + 2;
      blank(i, end);
      i = end;
    } else if (text[i] == 'R' && i + 1 < n && text[i + 1] == '"' && (i == 0 || !ident(text[i - 1]) ||
                                                                      text[i - 1] == 'u' || text[i - 1] == 'U' ||
                                                                      text[i - 1] == 'L' || text[i - 1] == '8')) {
      const size_t open = text.find('(', i + 2);
      if (open == std::string_view::npos) break;
      const std::string close = ")" + std::string(text.substr(i + 2, open - i - 2)) + "\"";
      size_t end = text.find(close, open);
      end = end == std::string_view::npos ? n : end + close.size();
      blank(i, end);
      i = end;
    } else if (text[i] == '"' || text[i] == '\'') {
      if (text[i] == '\'') {
        // A digit separator (2'000'000) when it is inside a number.
        size_t j = i;
        while (j > 0 && (ident(text[j - 1]) || text[j - 1] == '\'' || text[j - 1] == '.')) --j;
        if (j < i && std::isdigit(static_cast<unsigned char>(text[j]))) {
          ++i;
          continue;
        }
      }
      const char quote = text[i];
      size_t k = i + 1;
      while (k < n && text[k] != quote && text[k] != '\n') k += text[k] == '\\' ? 2 : 1;
      blank(i, std::min(k + 1, n));
      i = k + 1;
    } else {
      ++i;
    }
  }
  return out;
}

// Direct reads of the system's clocks. `X::now(` is any std::chrono clock, by its name
// or by an alias of it (env::Clock's readings are Steady() and Now()).
const std::vector<std::regex>& Reads() {
  static const std::vector<std::regex> reads = {
      std::regex(R"(::\s*now\s*\()"),
      std::regex(R"(\bhigh_resolution_clock\b)"),
      std::regex(R"(\b(clock_gettime|gettimeofday|timespec_get|ftime)\s*\()"),
      std::regex(R"((^|[^\w.>])(std\s*::\s*|::\s*)?time\s*\(\s*(nullptr|NULL|0|&\s*\w+)\s*\))"),
      std::regex(R"(\bstd\s*::\s*(time|clock)\s*\()"),
  };
  return reads;
}

struct Read {
  size_t line;
  std::string text;
};

// The clock reads in one file's text, by line (1-based).
std::vector<Read> ClockReads(std::string_view text) {
  const std::string code = Code(text);
  std::vector<Read> out;
  size_t start = 0, line = 1;
  while (start <= code.size()) {
    size_t end = code.find('\n', start);
    if (end == std::string::npos) end = code.size();
    const std::string_view l(code.data() + start, end - start);
    if (l.find("now") != l.npos || l.find("time") != l.npos || l.find("clock") != l.npos) {
      const std::string s(l);
      for (const std::regex& r : Reads()) {
        if (std::regex_search(s, r)) {
          std::string original(text.substr(start, end - start));
          original.erase(0, original.find_first_not_of(" \t"));
          out.push_back({line, original});
          break;
        }
      }
    }
    start = end + 1;
    ++line;
  }
  return out;
}

TEST(ClockRuleTest, TheScannerFindsReadsAndIgnoresCommentsAndText) {
  EXPECT_EQ(ClockReads("auto t = std::chrono::steady_clock::now();").size(), 1u);
  EXPECT_EQ(ClockReads("auto t = std::chrono::system_clock::now();").size(), 1u);
  EXPECT_EQ(ClockReads("using C = std::chrono::steady_clock;\nauto t = C::now();").size(), 1u);
  EXPECT_EQ(ClockReads("auto t = Session::Clock::now ();").size(), 1u);
  EXPECT_EQ(ClockReads("std::chrono::high_resolution_clock::time_point t;").size(), 1u);
  EXPECT_EQ(ClockReads("time_t t = time(nullptr);").size(), 1u);
  EXPECT_EQ(ClockReads("time_t t = ::time(NULL);").size(), 1u);
  EXPECT_EQ(ClockReads("time_t t = std::time(&t);").size(), 1u);
  EXPECT_EQ(ClockReads("timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);").size(), 1u);
  EXPECT_EQ(ClockReads("timeval tv; gettimeofday(&tv, nullptr);").size(), 1u);
  EXPECT_EQ(ClockReads("auto c = std::clock();").size(), 1u);
  const std::vector<Read> at = ClockReads("int a;\n\nint b = 2'000'000;\n  auto t = std::chrono::steady_clock::now();\n");
  ASSERT_EQ(at.size(), 1u);
  EXPECT_EQ(at[0].line, 4u);
  EXPECT_EQ(at[0].text, "auto t = std::chrono::steady_clock::now();");

  EXPECT_TRUE(ClockReads("// std::chrono::steady_clock::now() is not read here").empty());
  EXPECT_TRUE(ClockReads("/* time(nullptr)\n gettimeofday() */ int x;").empty());
  EXPECT_TRUE(ClockReads(R"x(const char* s = "steady_clock::now() and time(nullptr)";)x").empty());
  EXPECT_TRUE(ClockReads("const char* s = R\"js(Date::now(); time(0))js\";").empty());
  EXPECT_TRUE(ClockReads("char q = '\"'; int n = 1'000; // steady_clock::now()").empty());
  EXPECT_TRUE(ClockReads("auto a = clock.Now(); auto b = clock_->Steady(); env::RealClock().Now();").empty());
  EXPECT_TRUE(ClockReads("std::chrono::steady_clock::time_point t{}; int64_t time = 0; t.time();").empty());
  EXPECT_TRUE(ClockReads("SELECT now() - renewed_at").empty());
}

TEST(ClockRuleTest, NothingOutsideEnvReadsTheSystemClocksDirectly) {
  const fs::path src = fs::weakly_canonical(fs::path(CINCINNATI_TEST_SOURCE_DIR "/../src"));
  ASSERT_TRUE(fs::is_directory(src / "env")) << src;
  std::map<std::string, const Allowed*> allowed;
  for (const Allowed& a : kAllowed) allowed[a.file] = &a;
  std::map<std::string, std::vector<Read>> found;  // by file, sorted for the message
  size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(src)) {
    const fs::path& path = entry.path();
    if (!entry.is_regular_file() || (path.extension() != ".h" && path.extension() != ".cc")) continue;
    const std::string relative = path.lexically_relative(src).generic_string();
    if (relative.rfind("env/", 0) == 0) continue;
    ++files;
    std::vector<Read> reads = ClockReads(testing::ReadFile(path));
    if (!reads.empty()) found[relative] = std::move(reads);
  }
  EXPECT_GT(files, 100u) << "the scan found too few sources under " << src;
  std::string violations;
  for (const auto& [file, reads] : found) {
    auto a = allowed.find(file);
    if (a != allowed.end() && static_cast<int>(reads.size()) <= a->second->reads) continue;
    if (a != allowed.end()) {
      violations += "src/" + file + ": " + std::to_string(reads.size()) + " clock reads, but the allow-list (" +
                    a->second->reason + ") has " + std::to_string(a->second->reads) + "\n";
    }
    for (const Read& r : reads) violations += "src/" + file + ":" + std::to_string(r.line) + ": " + r.text + "\n";
  }
  EXPECT_TRUE(violations.empty())
      << "Read the time through an env::Clock (an injected one; env::RealClock() where there is none to be "
         "given), not the system's clocks directly. A pure latency timer may be added to kAllowed with its reason.\n"
      << violations;
  // An entry whose file has no read left would let a new one in unseen.
  for (const Allowed& a : kAllowed) {
    EXPECT_TRUE(found.count(a.file)) << "src/" << a.file << " is allowed clock reads but has none: drop it from kAllowed";
  }
}

}  // namespace
}  // namespace cincinnati
