// The hand-written plain-scalar resolver against the YAML 1.2 core-schema regexes it
// replaced (run with RE2 here), on every short string over the characters that matter.
#include <gtest/gtest.h>
#include <re2/re2.h>

#include <string>

#include "graph-data/yaml_scalar.h"

namespace cincinnati::graphdata {
namespace {

PlainKind ResolveByRegex(const std::string& s) {
  static const RE2 kNull("~|null|Null|NULL|");
  static const RE2 kBool("true|True|TRUE|false|False|FALSE");
  static const RE2 kInt("[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+");
  static const RE2 kFloat(
      "[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?|[-+]?\\.(inf|Inf|INF)|\\.(nan|NaN|NAN)");
  if (RE2::FullMatch(s, kNull)) return PlainKind::kNull;
  if (RE2::FullMatch(s, kBool)) return PlainKind::kBool;
  if (RE2::FullMatch(s, kInt)) return PlainKind::kInt;
  if (RE2::FullMatch(s, kFloat)) return PlainKind::kFloat;
  return PlainKind::kString;
}

TEST(YamlScalar, ResolvesNamedSpellings) {
  EXPECT_EQ(ResolvePlain(""), PlainKind::kNull);
  EXPECT_EQ(ResolvePlain("Null"), PlainKind::kNull);
  EXPECT_EQ(ResolvePlain("FALSE"), PlainKind::kBool);
  EXPECT_EQ(ResolvePlain("0x1F"), PlainKind::kInt);
  EXPECT_EQ(ResolvePlain("-12"), PlainKind::kInt);
  EXPECT_EQ(ResolvePlain("4.1"), PlainKind::kFloat);
  EXPECT_EQ(ResolvePlain("-.Inf"), PlainKind::kFloat);
  EXPECT_EQ(ResolvePlain("4.1.0"), PlainKind::kString);
  EXPECT_EQ(ResolvePlain("-.nan"), PlainKind::kString);  // nan takes no sign
  EXPECT_EQ(ResolvePlain("0o8"), PlainKind::kString);
  EXPECT_EQ(ResolvePlain("1e"), PlainKind::kString);
}

// Every string of up to four characters over an alphabet that reaches each branch of
// the patterns (signs, dots, digits, octal and hex markers, exponents, inf/nan letters).
TEST(YamlScalar, MatchesTheCoreSchemaRegexesExhaustively) {
  const std::string alphabet = "0179aAfFxoeE.+-_inINa~ lu";
  std::string s;
  size_t checked = 0, mismatches = 0;
  auto visit = [&](auto&& self, size_t depth) -> void {
    if (ResolvePlain(s) != ResolveByRegex(s)) {
      if (++mismatches <= 10) ADD_FAILURE() << "'" << s << "'";
    }
    ++checked;
    if (depth == 4) return;
    for (char c : alphabet) {
      s.push_back(c);
      self(self, depth + 1);
      s.pop_back();
    }
  };
  visit(visit, 0);
  EXPECT_EQ(mismatches, 0u);
  EXPECT_GT(checked, 390'000u);
  for (const char* word : {"null", "NULL", "true", "True", "false", "False", ".inf", "+.INF", ".NaN", ".NAN",
                           "0x", "0o", "0o17", "0xfF", "+0x1", "1.5e+10", "1.e5", ".5E-3", "1.2.3", "4.10.3"}) {
    EXPECT_EQ(ResolvePlain(word), ResolveByRegex(word)) << word;
  }
}

}  // namespace
}  // namespace cincinnati::graphdata
