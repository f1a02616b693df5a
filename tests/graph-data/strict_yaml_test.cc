// Strict YAML: malformed files are errors with their position, in the parser, in the
// graph builder's loader and in `graph-data check`; well-formed YAML keeps reading as
// before (tags, nulls, anchors).
#include "graph-data/yaml_document.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "graph-data/graph_data.h"
#include "graph-data/lint.h"
#include "graph-data/yaml_scalar.h"
#include "test_util.h"

namespace cincinnati::graphdata {
namespace {

namespace fs = std::filesystem;
using cincinnati::testing::TempDir;
using cincinnati::testing::WriteFile;

const fs::path kRevision = cincinnati::testing::FixtureGraphData();

struct Malformed {
  const char* name;
  std::string text;
  const char* position;  // "line L, column C" of the error
  const char* why;       // a word of the reason
};
// Names the case in test listings (gtest would print the struct's bytes).
void PrintTo(const Malformed& m, std::ostream* os) { *os << m.name; }

std::string Nested(int depth) { return std::string(depth, '[') + std::string(depth, ']') + "\n"; }

std::string Laughs() {
  std::string s = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'h'; ++c) {
    std::string prev(1, char(c - 1));
    s += fmt::format("{0}: &{0} [*{1}, *{1}, *{1}, *{1}, *{1}, *{1}, *{1}, *{1}, *{1}, *{1}]\n", std::string(1, c), prev);
  }
  return s;
}

// Each is a blocked-edges file a strict YAML 1.2 parser rejects.
const std::vector<Malformed>& Table() {
  static const std::vector<Malformed> t = {
      {"unterminated_quote", "to: 4.12.4\nfrom: \"4[.]12[.]3[+].*\n", "line 3, column 1", "quoted scalar"},
      {"tab_indentation", "to: 4.12.4\nfrom: .*\nurl:\n\t- x\n", "line 4, column 1", "cannot start any token (a tab: YAML indents with spaces only)"},
      {"duplicate_key", "to: 4.12.4\nfrom: .*\nto: 4.12.5\n", "line 3, column 1", "duplicate key 'to'"},
      {"trailing_garbage", "to: 4.12.4\nfrom: .*\n]\n", "line 3, column 1", "did not find expected key"},
      {"second_document", "to: 4.12.4\nfrom: .*\n---\nto: 4.12.5\n", "line 3, column 1", "second document"},
      {"unknown_alias", "to: *version\nfrom: .*\n", "line 1, column 5", "names no anchor"},
      {"bad_indentation", "to: 4.12.4\n  from: .*\n", "line 2, column 7", "mapping values"},
      {"unclosed_flow", "to: [4.12.4\nfrom: .*\n", "line 2, column 5", "flow sequence"},
      {"alias_bomb", Laughs(), "line", "too many nodes"},
      {"too_deep", Nested(500), "line 1, column 201", "deeper than 200"},
  };
  return t;
}

class MalformedYamlTest : public ::testing::TestWithParam<Malformed> {};

TEST_P(MalformedYamlTest, ParserNamesThePosition) {
  auto doc = ParseYaml(GetParam().text);
  ASSERT_FALSE(doc.ok());
  EXPECT_NE(doc.status().message().find(GetParam().position), std::string::npos) << doc.status().message();
  EXPECT_NE(doc.status().message().find(GetParam().why), std::string::npos) << doc.status().message();
}

// The graph builder's loader refuses the file as a deserialize error (when that class
// is disallowed) and, when it is tolerated, says it left the file out: the blocked
// edge never disappears without a word.
TEST_P(MalformedYamlTest, BuilderAndCheckRejectTheFile) {
  TempDir dir;
  fs::copy(kRevision, dir.path(), fs::copy_options::recursive);
  const std::string rel = std::string("blocked-edges/zz-") + GetParam().name + ".yaml";
  WriteFile(dir.path() / rel, GetParam().text);

  Diagnostics strict_diagnostics;
  auto strict = LoadGraphData(dir.path(), LoadOptions{{ErrorClass::kDeserialize}}, strict_diagnostics);
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(strict.status().message().find(rel + ": deserialize error: invalid YAML at " + GetParam().position),
            std::string::npos)
      << strict.status().message();

  Diagnostics tolerant_diagnostics;
  auto tolerant = LoadGraphData(dir.path(), LoadOptions{}, tolerant_diagnostics);
  ASSERT_TRUE(tolerant.ok()) << tolerant.status().message();
  bool warned = false;
  for (const auto& d : tolerant_diagnostics.items()) {
    warned |= d.location == rel && d.message.find("deserialize error (tolerated)") != std::string::npos;
  }
  EXPECT_TRUE(warned);

  Diagnostics check = CheckGraphData(dir.path());
  bool reported = false;
  for (const auto& d : check.items()) {
    reported |= d.severity == Diagnostic::Severity::kError && d.location == rel &&
                d.message.find(GetParam().position) != std::string::npos;
  }
  EXPECT_TRUE(reported);
}

INSTANTIATE_TEST_SUITE_P(Table, MalformedYamlTest, ::testing::ValuesIn(Table()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(StrictYamlTest, WellFormedYamlReadsAsBefore) {
  auto doc = ParseYaml(
      "name: &n stable-4.1\n"
      "quoted: '4'\n"
      "plain: 4\n"
      "empty:\n"
      "tilde: ~\n"
      "tagged: !!str 4\n"
      "again: *n\n"
      "list: [a, \"b\"]\n"
      "block: |\n  text\n");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  EXPECT_EQ(YamlString((*doc)["name"]), "stable-4.1");
  EXPECT_EQ(YamlString((*doc)["quoted"]), "4");
  EXPECT_EQ(YamlString((*doc)["plain"]), std::nullopt);
  EXPECT_EQ(DescribeYaml((*doc)["plain"]), "an integer");
  EXPECT_TRUE((*doc)["empty"].IsNull());
  EXPECT_TRUE((*doc)["tilde"].IsNull());
  EXPECT_EQ(YamlString((*doc)["tagged"]), "4");
  EXPECT_EQ(YamlString((*doc)["again"]), "stable-4.1");
  ASSERT_TRUE((*doc)["list"].IsSequence());
  EXPECT_EQ((*doc)["list"].size(), 2u);
  EXPECT_EQ(YamlString((*doc)["block"]), "text\n");
  EXPECT_FALSE((*doc)["missing"].IsDefined());

  // Key order is kept, and the empty file is a null document.
  std::vector<std::string> keys;
  for (const auto& kv : *doc) keys.push_back(kv.first.Scalar());
  EXPECT_EQ(keys.front(), "name");
  EXPECT_EQ(keys.back(), "block");
  auto empty = ParseYaml("");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->IsNull());
}

// The report that started this: a blocked edge with an unterminated quote passed
// `check` with 0 errors and vanished from the graph.
TEST(StrictYamlTest, UnterminatedQuoteInRealDataIsAnErrorNotAMissingBlock) {
  TempDir dir;
  fs::copy(kRevision, dir.path(), fs::copy_options::recursive);
  WriteFile(dir.path() / "blocked-edges/4.12.4-quote.yaml", "to: 4.12.4\nfrom: \"4[.]12[.]3[+].*\n");
  Diagnostics check = CheckGraphData(dir.path());
  EXPECT_EQ(check.Count(Diagnostic::Severity::kError), 1u);
  Diagnostics d;
  EXPECT_FALSE(LoadGraphData(dir.path(), LoadOptions{{ErrorClass::kDeserialize}}, d).ok());
}

}  // namespace
}  // namespace cincinnati::graphdata
