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

// A cluster whose clock was ahead took an answer numbered by a service whose clock was
// ahead too. Both clocks corrected, the service numbers below it (graph_generation.h):
// the agent refuses, and its condition says what happened and what to do.
TEST_F(AnswerTrustRecordTest, ARollbackFromANumberAheadOfTheClockSaysTheClockWasAhead) {
  AnswerTrust trust(store_, keys_, false);
  ASSERT_TRUE(trust.Load().ok());
  const int64_t year = 365 * 86400;
  auto header = SignAnswer({key_}, {uint64_t(now_ + year) * 1000, now_ + year, now_ + year + 3600, false}, kScope, kBody);
  ASSERT_TRUE(header.ok());
  const AnswerTrust::Outcome ahead = trust.Check(&*header, kBody, kScope, kUpstream, now_ + year);
  ASSERT_FALSE(ahead.refusal) << ahead.refusal->message;
  trust.Taken(ahead);
  const std::string renumbered = Signed(uint64_t(now_ + kMaxGenerationLead) * 1000);
  const AnswerTrust::Outcome refused = trust.Check(&renumbered, kBody, kScope, kUpstream, now_);
  ASSERT_TRUE(refused.refusal);
  EXPECT_EQ(refused.refusal->reason, "SignatureRolledBack");
  EXPECT_NE(refused.refusal->message.find("ahead of this cluster's clock"), std::string::npos) << refused.refusal->message;
  EXPECT_NE(refused.refusal->message.find(RecordPath()), std::string::npos) << "names the record to delete";
  EXPECT_NE(refused.refusal->message.find("docs/clocks-ahead.md"), std::string::npos);
  // An ordinary rollback (the number taken is not ahead of the clock) says nothing of clocks.
  AnswerTrust other(store_, keys_, false);
  const std::string seven = Signed(7), six = Signed(6);
  other.Taken(other.Check(&seven, kBody, kScope, "https://other.example.com/graph", now_));
  const AnswerTrust::Outcome older = other.Check(&six, kBody, kScope, "https://other.example.com/graph", now_);
  ASSERT_TRUE(older.refusal);
  EXPECT_EQ(older.refusal->message.find("clock"), std::string::npos) << older.refusal->message;
}

// An answer whose signature the service withheld (it would have expired) is refused as
// expired, saying why, where an unsigned one would be refused; else used as unsigned.
TEST_F(AnswerTrustRecordTest, AWithheldSignatureIsRefusedAsExpiredWithTheServicesReason) {
  AnswerTrust trust(store_, keys_, false);
  ASSERT_TRUE(trust.Load().ok());
  const std::string withheld = "expired=1790000000; fresh=1789996400";
  EXPECT_FALSE(trust.Check(nullptr, kBody, kScope, kUpstream, now_, &withheld).refusal) << "not required, never signed: used";
  const std::string header = Signed(7);
  trust.Taken(trust.Check(&header, kBody, kScope, kUpstream, now_));
  const AnswerTrust::Outcome refused = trust.Check(nullptr, kBody, kScope, kUpstream, now_, &withheld);
  ASSERT_TRUE(refused.refusal);
  EXPECT_EQ(refused.refusal->reason, "SignatureExpired");
  EXPECT_NE(refused.refusal->message.find("withheld its signature (expired=1790000000"), std::string::npos) << refused.refusal->message;
}

}  // namespace
}  // namespace cincinnati::agent
