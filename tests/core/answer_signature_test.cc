// Signed answers (core/answer_signature.h): a signature binds the bytes, the channel
// and arch, the generation and the validity; every way an answer can be wrong is told
// apart, and the header parser takes anything.
#include <gtest/gtest.h>

#include "core/answer_signature.h"
#include "core/base64.h"
#include "env/key_files.h"
#include "signing_util.h"

namespace cincinnati {
namespace {

constexpr char kBody[] = R"({"version":1,"nodes":[],"edges":[],"conditionalEdges":[]})";

class AnswerSignatureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto key = SigningKey::FromPem(testing::NewSigningKeyPem());
    ASSERT_TRUE(key.ok()) << key.status().message();
    key_ = *key;
    auto pub = PublicKey::FromPem(key_->PublicPem());
    ASSERT_TRUE(pub.ok()) << pub.status().message();
    trusted_.Add(*pub);
  }
  std::string Sign(SignedFacts facts, std::string_view body = kBody, std::string_view channel = "stable-4.13") {
    auto header = SignAnswer({key_}, facts, {channel, "amd64", "4.13.1", ""}, body);
    EXPECT_TRUE(header.ok()) << header.status().message();
    return header.ok() ? *header : "";
  }
  SignatureCheck Check(const std::string* header, std::string_view body = kBody, int64_t now = 1000, uint64_t newest = 0,
                       std::string_view channel = "stable-4.13") {
    return CheckAnswerSignature(header, body, {channel, "amd64", "4.13.1", ""}, trusted_, now, newest);
  }
  std::shared_ptr<const SigningKey> key_;
  TrustedKeys trusted_;
};

TEST_F(AnswerSignatureTest, AFreshAnswerSignedByATrustedKeyIsAccepted) {
  const std::string header = Sign({.generation = 7, .signed_at = 900, .expires = 2000});
  EXPECT_TRUE(header.starts_with("v=1; generation=7; signed=900; expires=2000; sig=" + key_->id() + ":")) << header;
  const SignatureCheck check = Check(&header, kBody, 1000, 7);
  EXPECT_EQ(check.verdict, SignatureVerdict::kAccepted) << check.message;
  EXPECT_EQ(check.facts.generation, 7u);
  EXPECT_EQ(check.key_id, key_->id());
  EXPECT_EQ(key_->id().size(), 16u);
}

TEST_F(AnswerSignatureTest, EveryWrongAnswerIsRefusedWithItsReason) {
  const std::string header = Sign({.generation = 7, .signed_at = 900, .expires = 2000});
  EXPECT_EQ(Check(nullptr).verdict, SignatureVerdict::kMissing);
  std::string tampered = kBody;
  tampered[10] = 'X';
  EXPECT_EQ(Check(&header, tampered).verdict, SignatureVerdict::kInvalid);
  EXPECT_EQ(Check(&header, kBody, 1000, 0, "fast-4.13").verdict, SignatureVerdict::kInvalid) << "another channel's answer";
  EXPECT_EQ(Check(&header, kBody, 2000).verdict, SignatureVerdict::kExpired);
  EXPECT_EQ(Check(&header, kBody, 100).verdict, SignatureVerdict::kExpired) << "signed 800 s in the future";
  EXPECT_EQ(Check(&header, kBody, 1000, 8).verdict, SignatureVerdict::kRolledBack);
  // Generations are milliseconds of a clock: one more than the lead (five minutes) ahead
  // comes from a wrong clock or a forged number, and would lock out every later answer.
  ASSERT_EQ(kMaxGenerationLead, 300u);
  const std::string day_ahead = Sign({.generation = (1000 + kMaxGenerationLead) * 1000, .signed_at = 900, .expires = 2000});
  EXPECT_EQ(Check(&day_ahead).verdict, SignatureVerdict::kAccepted);
  const std::string beyond = Sign({.generation = (1000 + kMaxGenerationLead + 1) * 1000, .signed_at = 900, .expires = 2000});
  EXPECT_EQ(Check(&beyond).verdict, SignatureVerdict::kInvalid) << Check(&beyond).message;
  // Times changed by a proxy: the statement no longer matches.
  std::string later = header;
  later.replace(later.find("expires=2000"), 12, "expires=9000");
  EXPECT_EQ(Check(&later, kBody, 2500).verdict, SignatureVerdict::kInvalid);
  // Another key's signature, trusted or not.
  auto other = SigningKey::FromPem(testing::NewSigningKeyPem());
  ASSERT_TRUE(other.ok());
  auto by_other = SignAnswer({*other}, {.generation = 7, .signed_at = 900, .expires = 2000}, AnswerScope{"stable-4.13", "amd64", "4.13.1", ""}, kBody);
  ASSERT_TRUE(by_other.ok());
  EXPECT_EQ(Check(&*by_other).verdict, SignatureVerdict::kUnknownKey);
  // A trusted key id with another key's signature bytes.
  std::string forged = *by_other;
  forged.replace(forged.find("sig=") + 4, 16, key_->id());
  EXPECT_EQ(Check(&forged).verdict, SignatureVerdict::kInvalid);
  for (SignatureVerdict v : {SignatureVerdict::kMissing, SignatureVerdict::kMalformed, SignatureVerdict::kUnknownKey,
                             SignatureVerdict::kInvalid, SignatureVerdict::kExpired, SignatureVerdict::kRolledBack}) {
    EXPECT_TRUE(SignatureReason(v).starts_with("Signature")) << SignatureReason(v);
  }
}

TEST_F(AnswerSignatureTest, ASignatureBindsTheVersionAskedAndTheClusterWhenMadeForItAlone) {
  const SignedFacts facts{.generation = 1, .signed_at = 900, .expires = 2000};
  const AnswerScope asked{"stable-4.13", "amd64", "4.13.1", "00000000-0000-4000-8000-000000000001"};
  auto general = SignAnswer({key_}, facts, asked, kBody);
  ASSERT_TRUE(general.ok());
  AnswerScope other_version = asked;
  other_version.version = "4.12.3";
  EXPECT_EQ(CheckAnswerSignature(&*general, kBody, other_version, trusted_, 1000, 0).verdict, SignatureVerdict::kInvalid)
      << "another version's answer (a channel-target view) does not pass";
  AnswerScope other_cluster = asked;
  other_cluster.id = "00000000-0000-4000-8000-000000000002";
  EXPECT_EQ(CheckAnswerSignature(&*general, kBody, other_cluster, trusted_, 1000, 0).verdict, SignatureVerdict::kAccepted)
      << "an answer made for everyone binds no id";
  SignedFacts personal = facts;
  personal.per_cluster = true;
  auto mine = SignAnswer({key_}, personal, asked, kBody);
  ASSERT_TRUE(mine.ok());
  EXPECT_NE(mine->find("; scope=cluster;"), std::string::npos) << *mine;
  EXPECT_EQ(CheckAnswerSignature(&*mine, kBody, asked, trusted_, 1000, 0).verdict, SignatureVerdict::kAccepted);
  EXPECT_EQ(CheckAnswerSignature(&*mine, kBody, other_cluster, trusted_, 1000, 0).verdict, SignatureVerdict::kInvalid)
      << "one cluster's hotfix answer does not pass for another";
  std::string stripped = *mine;
  stripped.erase(stripped.find("; scope=cluster"), 15);
  EXPECT_EQ(CheckAnswerSignature(&stripped, kBody, other_cluster, trusted_, 1000, 0).verdict, SignatureVerdict::kInvalid)
      << "the scope cannot be taken off";
}

TEST_F(AnswerSignatureTest, TwoKeysSignDuringARotationAndEitherIsEnough) {
  auto next = SigningKey::FromPem(testing::NewSigningKeyPem());
  ASSERT_TRUE(next.ok());
  auto both = SignAnswer({key_, *next}, {.generation = 1, .signed_at = 900, .expires = 2000}, AnswerScope{"stable-4.13", "amd64", "4.13.1", ""}, kBody);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(Check(&*both).verdict, SignatureVerdict::kAccepted) << "the old key is trusted";
  TrustedKeys only_next;
  only_next.Add(*PublicKey::FromPem((*next)->PublicPem()));
  const SignatureCheck check = CheckAnswerSignature(&*both, kBody, {"stable-4.13", "amd64", "4.13.1", ""}, only_next, 1000, 0);
  EXPECT_EQ(check.verdict, SignatureVerdict::kAccepted) << check.message;
  EXPECT_EQ(check.key_id, (*next)->id());
}

TEST_F(AnswerSignatureTest, HeadersThatDoNotParseAreMalformedNeverAFault) {
  const std::string sig = Sign({.generation = 1, .signed_at = 900, .expires = 2000});
  const std::string good_sig = sig.substr(sig.find("sig="));
  for (const std::string& header : std::vector<std::string>{
           "", "v=1", "garbage", "v=2; generation=1; signed=1; expires=2; " + good_sig,
           "v=1; generation=-1; signed=1; expires=2; " + good_sig, "v=1; generation=1; signed=1; " + good_sig,
           "v=1; generation=99999999999999999999; signed=1; expires=2; " + good_sig,
           "v=1; generation=1; signed=1; expires=2; sig=short:AAAA", "v=1; generation=1; signed=1; expires=2; sig=0123456789abcdef:!!!",
           std::string(5000, 'v')}) {
    const SignatureCheck check = Check(&header);
    EXPECT_EQ(check.verdict, SignatureVerdict::kMalformed) << header.substr(0, 80);
    EXPECT_FALSE(check.message.empty());
  }
  // Names a later version may add are ignored.
  std::string extended = sig + "; hint=whatever";
  EXPECT_EQ(Check(&extended).verdict, SignatureVerdict::kAccepted);
}

TEST(KeyFilesTest, TrustedKeysAreThePemFilesOfADirectory) {
  testing::TempDir dir, trusted;
  const auto a = testing::WriteKeyPair(dir.path(), trusted.path(), "a");
  const auto b = testing::WriteKeyPair(dir.path(), trusted.path(), "b");
  testing::WriteFile(trusted / "README", "not a key, not .pem: ignored\n");
  auto keys = env::LoadTrustedKeys(trusted.path().string());
  ASSERT_TRUE(keys.ok()) << keys.status().message();
  EXPECT_EQ(keys->size(), 2u);
  EXPECT_NE(keys->Find(a.id), nullptr);
  EXPECT_NE(keys->Find(b.id), nullptr);
  auto signing = env::LoadSigningKeys(a.private_key.string() + "," + b.private_key.string());
  ASSERT_TRUE(signing.ok()) << signing.status().message();
  EXPECT_EQ((*signing)[1]->id(), b.id);
  // A .pem that is not a key is an error that names it; so is a missing private key.
  testing::WriteFile(trusted / "broken.pem", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n");
  auto broken = env::LoadTrustedKeys(trusted.path().string());
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("broken.pem"), std::string::npos) << broken.status().message();
  EXPECT_FALSE(env::LoadSigningKeys((dir / "missing.key").string()).ok());
  EXPECT_FALSE(env::LoadSigningKeys(a.public_key.string()).ok()) << "a public key cannot sign";
  EXPECT_FALSE(env::LoadTrustedKeys((dir / "nowhere").string()).ok());
}

}  // namespace
}  // namespace cincinnati
