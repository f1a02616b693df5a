#include "core/semver.h"

#include <algorithm>

#include <gtest/gtest.h>

namespace cincinnati {
namespace {

Version V(std::string_view s) {
  auto v = Version::Parse(s);
  EXPECT_TRUE(v.ok()) << s << ": " << v.status().message();
  return v.ok() ? v.value() : Version();
}

TEST(SemverTest, ParsesAndPrintsCanonicalForms) {
  for (const char* s : {"0.0.0", "1.2.3", "4.2.0+amd64", "4.12.0-rc.0+multi", "4.0.0-0.okd-0+amd64",
                        "4.2.11-s390x+s390x", "1.0.0-alpha.beta.1", "1.0.0+build.001", "4.1.0-0.hotfix-2020-09-19-234758",
                        "18446744073709551615.0.0"}) {
    EXPECT_EQ(V(s).ToString(), s);
  }
}

TEST(SemverTest, NormalizesSurroundingWhitespace) {
  EXPECT_EQ(V("1.1.0\n").ToString(), "1.1.0");
  EXPECT_EQ(V(" \t4.2.0+amd64\r\n").ToString(), "4.2.0+amd64");
}

TEST(SemverTest, SplitsFields) {
  Version v = V("4.12.0-rc.1+amd64.x");
  EXPECT_EQ(v.major(), 4u);
  EXPECT_EQ(v.minor(), 12u);
  EXPECT_EQ(v.patch(), 0u);
  ASSERT_EQ(v.pre().size(), 2u);
  EXPECT_FALSE(v.pre()[0].numeric);
  EXPECT_TRUE(v.pre()[1].numeric);
  EXPECT_EQ(v.pre()[1].number, 1u);
  EXPECT_EQ(v.BuildString(), "amd64.x");
  EXPECT_EQ(v.ToStringWithoutBuild(), "4.12.0-rc.1");
}

TEST(SemverTest, RejectsInvalidVersionsQuotingTheInput) {
  for (const char* s : {"", "4.2", "4", "4.2.0.1", "v4.2.0", "01.2.3", "1.02.3", "1.2.03", "1.2.3-", "1.2.3+",
                        "1.2.3-a..b", "1.2.3+a..b", "1.2.3-a_b", "1.2.3 4", "a.b.c", "18446744073709551616.0.0",
                        "1.2.-3", "4.2.0+amd64+x"}) {
    auto v = Version::Parse(s);
    ASSERT_FALSE(v.ok()) << "accepted '" << s << "'";
    EXPECT_NE(v.status().message().find(std::string("'") + s + "'"), std::string::npos) << v.status().message();
  }
}

TEST(SemverTest, PrereleaseLeadingZeroIsTextAsInTheReference) {
  Version v = V("1.0.0-01");
  ASSERT_EQ(v.pre().size(), 1u);
  EXPECT_FALSE(v.pre()[0].numeric);
  EXPECT_EQ(v.ToString(), "1.0.0-01");
}

TEST(SemverTest, EqualityIgnoresBuildMetadata) {
  EXPECT_EQ(V("4.2.0+amd64"), V("4.2.0+s390x"));
  EXPECT_EQ(V("4.2.0+amd64"), V("4.2.0"));
  EXPECT_FALSE(V("4.2.0+amd64").SameIncludingBuild(V("4.2.0+s390x")));
  EXPECT_TRUE(V("4.2.0+amd64").SameIncludingBuild(V("4.2.0+amd64")));
  EXPECT_FALSE(V("4.2.0-rc.1") == V("4.2.0"));
  EXPECT_FALSE(V("1.0.0-01") == V("1.0.0-1"));
}

TEST(SemverTest, PrecedenceFollowsSemVerSpec) {
  // The ordering example of the SemVer 2.0.0 specification (semver.org).
  std::vector<std::string> ordered = {"1.0.0-alpha",      "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta",
                                      "1.0.0-beta.2",     "1.0.0-beta.11", "1.0.0-rc.1",       "1.0.0",
                                      "1.0.1",            "1.1.0",         "2.0.0",            "10.0.0"};
  for (size_t i = 0; i + 1 < ordered.size(); ++i) {
    EXPECT_TRUE(V(ordered[i]).Compare(V(ordered[i + 1])) < 0) << ordered[i] << " < " << ordered[i + 1];
    EXPECT_TRUE(V(ordered[i + 1]).Compare(V(ordered[i])) > 0);
  }
  std::vector<Version> shuffled;
  for (auto it = ordered.rbegin(); it != ordered.rend(); ++it) shuffled.push_back(V(*it));
  std::sort(shuffled.begin(), shuffled.end());
  for (size_t i = 0; i < ordered.size(); ++i) EXPECT_EQ(shuffled[i].ToString(), ordered[i]);
  EXPECT_TRUE(V("1.0.0+a").Compare(V("1.0.0+b")) == 0);
}

TEST(SemverTest, WithBuildReplacesBuildMetadata) {
  EXPECT_EQ(V("4.2.0+foo").WithBuild({Identifier::Text("amd64")}).ToString(), "4.2.0+amd64");
  EXPECT_EQ(V("4.2.0+foo").WithoutBuild().ToString(), "4.2.0");
}

}  // namespace
}  // namespace cincinnati
