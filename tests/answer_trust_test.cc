// AnswerTrust's record (agent/answer_trust.h): re-spellings of one update service's URL
// name one record of its signed answers, and no credentials or query reach it; what was
// taken survives a restart; a record that cannot be read is set aside, says so, and
// trust starts again rather than the agent not starting.
#include <gtest/gtest.h>

#include <filesystem>

#include "agent/answer_trust.h"
#include "signing_util.h"
#include "test_util.h"

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

constexpr char kBody[] = R"({"nodes":[],"edges":[],"conditionalEdges":[]})";
constexpr char kUpstream[] = "https://updates.example.com/api/upgrades_info/graph";
const AnswerScope kScope{"stable-4.13", "amd64", "4.13.1", ""};

class AnswerTrustRecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto key = SigningKey::FromPem(testing::NewSigningKeyPem());
    ASSERT_TRUE(key.ok());
    key_ = *key;
    auto pub = PublicKey::FromPem(key_->PublicPem());
    ASSERT_TRUE(pub.ok());
    keys_.Add(*pub);
  }
  // The signature header of kBody at `generation`, signed at `now`.
  std::string Signed(uint64_t generation) {
    auto header = SignAnswer({key_}, {generation, now_, now_ + 3600, false}, kScope, kBody);
    EXPECT_TRUE(header.ok()) << header.status().message();
    return header.ok() ? *header : "";
  }
  std::string RecordPath() { return store_.Location("agentstate", "answer-signatures"); }

  testing::TempDir dir_;
  FileObjectStore store_{dir_.path()};
  std::shared_ptr<const SigningKey> key_;
  TrustedKeys keys_;
  const int64_t now_ = 1790000000;
};

TEST_F(AnswerTrustRecordTest, WhatWasTakenSurvivesARestart) {
  {
    AnswerTrust trust(store_, keys_, false);
    ASSERT_TRUE(trust.Load().ok());
    const std::string header = Signed(7);
    const AnswerTrust::Outcome taken = trust.Check(&header, kBody, kScope, kUpstream, now_);
    ASSERT_FALSE(taken.refusal) << taken.refusal->message;
    trust.Taken(taken);
  }
  AnswerTrust restarted(store_, keys_, false);
  ASSERT_TRUE(restarted.Load().ok());
  EXPECT_FALSE(restarted.record_set_aside());
  EXPECT_EQ(restarted.newest_generation(), 7u);
  const std::string older = Signed(6);
  auto rolled_back = restarted.Check(&older, kBody, kScope, kUpstream, now_);
  ASSERT_TRUE(rolled_back.refusal);
  EXPECT_EQ(rolled_back.refusal->reason, "SignatureRolledBack");
  auto stripped = restarted.Check(nullptr, kBody, kScope, "HTTPS://updates.example.com:443/api/upgrades_info/graph/", now_);
  ASSERT_TRUE(stripped.refusal) << "an upstream that signed must keep signing";
  EXPECT_EQ(stripped.refusal->reason, "SignatureMissing");
}

TEST_F(AnswerTrustRecordTest, AnUnreadableRecordIsSetAsideAndTrustStartsAgain) {
  for (const std::string& record : {std::string("{\"upstreams\": [{\"upstream\""), std::string("[1, 2, 3]"),
                                   std::string(R"({"upstreams": [{"upstream": 1, "newestGeneration": 7}]})"),
                                   std::string(R"({"upstreams": [{"upstream": "x", "newestGeneration": -1}]})")}) {
    SCOPED_TRACE(record);
    testing::WriteFile(RecordPath(), record);
    AnswerTrust trust(store_, keys_, false);
    ASSERT_TRUE(trust.Load().ok()) << "a record that cannot be read never stops the agent";
    EXPECT_TRUE(trust.record_set_aside());
    EXPECT_FALSE(std::filesystem::exists(RecordPath()));
    int aside = 0;
    for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(RecordPath()).parent_path())) {
      if (testing::ReadFile(entry.path()) == record) ++aside;
    }
    EXPECT_EQ(aside, 1) << "kept for a person to read";
    EXPECT_EQ(trust.newest_generation(), 0u);
    EXPECT_FALSE(trust.Check(nullptr, kBody, kScope, kUpstream, now_).refusal) << "trust on first use starts again";
    std::filesystem::remove_all(std::filesystem::path(RecordPath()).parent_path());
  }
}

}  // namespace
}  // namespace cincinnati::agent
