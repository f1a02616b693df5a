#include "core/release_metadata.h"

#include <gtest/gtest.h>

namespace cincinnati {
namespace {

TEST(ReleaseMetadataTest, ParsesAFullDocument) {
  auto r = ParseReleaseMetadata(R"({"kind":"cincinnati-metadata-v0","version":"4.2.1","previous":["4.2.0","4.1.9"],
      "next":["4.3.0"],"metadata":{"url":"https://errata/1","description":""},"ignored":{"x":1}})");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->version.ToString(), "4.2.1");
  ASSERT_EQ(r->previous.size(), 2u);
  EXPECT_EQ(r->previous[1].ToString(), "4.1.9");
  EXPECT_EQ(r->next[0].ToString(), "4.3.0");
  EXPECT_EQ(r->metadata.at("url"), "https://errata/1");
}

TEST(ReleaseMetadataTest, OptionalKeysDefaultToEmpty) {
  auto r = ParseReleaseMetadata(R"({"kind":"cincinnati-metadata-v0","version":"1.0.0"})");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->previous.empty());
  EXPECT_TRUE(r->next.empty());
  EXPECT_TRUE(r->metadata.empty());
}

TEST(ReleaseMetadataTest, RejectsInvalidDocumentsNamingTheProblem) {
  struct Case {
    const char* json;
    const char* needle;
  };
  for (const Case& c : std::vector<Case>{
           {"{", "invalid JSON"},
           {R"({"version":"1.0.0"})", "'kind'"},
           {R"({"kind":"cincinnati-metadata-v1","version":"1.0.0"})", "got 'cincinnati-metadata-v1'"},
           {R"({"kind":"cincinnati-metadata-v0"})", "'version'"},
           {R"({"kind":"cincinnati-metadata-v0","version":"4.2"})", "'4.2'"},
           {R"({"kind":"cincinnati-metadata-v0","version":"1.0.0","previous":["0.9"]})", "'previous[0]'"},
           {R"({"kind":"cincinnati-metadata-v0","version":"1.0.0","next":"1.1.0"})", "'next' must be an array"},
           {R"({"kind":"cincinnati-metadata-v0","version":"1.0.0","metadata":{"a":true}})", "metadata 'a'"},
       }) {
    auto r = ParseReleaseMetadata(c.json);
    ASSERT_FALSE(r.ok()) << c.json;
    EXPECT_NE(r.status().message().find(c.needle), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace cincinnati
