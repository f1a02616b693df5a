// UpstreamIdentity (agent/answer_trust.h): re-spellings of one update service's URL name
// one record of its signed answers, and no credentials or query reach the record.
#include <gtest/gtest.h>

#include "agent/answer_trust.h"

namespace cincinnati::agent {
namespace {

TEST(UpstreamIdentityTest, ReSpellingsOfOneServiceNameOneRecord) {
  const std::string id = UpstreamIdentity("https://updates.example.com/api/upgrades_info/graph");
  EXPECT_EQ(id, "https://updates.example.com/api/upgrades_info/graph");
  for (const char* same : {"https://updates.example.com/api/upgrades_info/graph/", "HTTPS://Updates.Example.COM/api/upgrades_info/graph",
                           "https://updates.example.com:443/api/upgrades_info/graph", "https://updates.example.com/api/upgrades_info/graph?x=1",
                           "https://updates.example.com/api/upgrades_info/graph#top",
                           "https://user:token@updates.example.com/api/upgrades_info/graph"}) {
    EXPECT_EQ(UpstreamIdentity(same), id) << same;
  }
  EXPECT_NE(UpstreamIdentity("http://updates.example.com/api/upgrades_info/graph"), id) << "another scheme";
  EXPECT_NE(UpstreamIdentity("https://updates.example.com:8443/api/upgrades_info/graph"), id) << "another port";
  EXPECT_NE(UpstreamIdentity("https://updates.example.com/API/upgrades_info/graph"), id) << "paths are case-sensitive";
  EXPECT_EQ(UpstreamIdentity("http://127.0.0.1:80/"), "http://127.0.0.1");
  EXPECT_EQ(UpstreamIdentity("http://127.0.0.1:8080/graph"), "http://127.0.0.1:8080/graph");
  EXPECT_EQ(UpstreamIdentity("not a url"), "not a url");
}

}  // namespace
}  // namespace cincinnati::agent
