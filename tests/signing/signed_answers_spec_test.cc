// The specification of signed answers (docs/signed-answers.md) against the code: its
// worked example's key id, statement and headers are byte for byte what the code makes
// with the example's key for the example's request, body and facts; the code accepts
// them exactly within the validity the page states; and the page's OpenSSL commands
// verify them (skipped without an `openssl` binary). So a change of a byte on the page,
// or of the format in the code, fails here.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>

#include "core/answer_signature.h"
#include "core/sha256.h"
#include "http_server/query.h"
#include "signing/answer_signer.h"
#include "service/view_cache.h"
#include "test_util.h"

namespace cincinnati {
namespace {

namespace fs = std::filesystem;

// The example's facts, as the page states them: signed a minute after the graph's
// source vouched for it, valid an hour after that.
constexpr uint64_t kGeneration = 1767225600000;
constexpr int64_t kFresh = 1767225600, kSigned = 1767225660, kExpires = 1767229200;
constexpr SignedFacts kFacts{.generation = kGeneration, .signed_at = kSigned, .expires = kExpires};

// The code blocks that follow an `<!-- example:NAME -->` line, by NAME: each block's
// lines, every one ended by a line feed.
std::map<std::string, std::string> ExampleBlocks(const std::string& page) {
  std::map<std::string, std::string> blocks;
  const std::string marker = "<!-- example:", marker_end = " -->\n```";
  for (size_t at = page.find(marker); at != std::string::npos; at = page.find(marker, at + 1)) {
    const size_t name_end = page.find(marker_end, at);
    if (name_end == std::string::npos) continue;  // not followed by a block: missed below
    const size_t content = page.find('\n', name_end + marker_end.size()) + 1;  // after the fence's info string
    const size_t close = page.find("\n```\n", content - 1);
    if (close == std::string::npos) continue;
    blocks[page.substr(at + marker.size(), name_end - at - marker.size())] = page.substr(content, close + 1 - content);
  }
  return blocks;
}

std::string WithoutFinalNewline(std::string text) {
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

std::string WithLineFeeds(std::string text) {
  for (size_t at = text.find("\r\n"); at != std::string::npos; at = text.find("\r\n", at)) text.erase(at, 1);
  return text;
}

class SignedAnswersSpecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const fs::path page = testing::Examples().parent_path() / "docs" / "signed-answers.md";
    blocks_ = ExampleBlocks(testing::ReadFile(page));
    for (const char* name : {"private-key", "public-key", "key-id", "request", "body", "statement", "headers", "verify", "sign"}) {
      ASSERT_TRUE(blocks_.count(name)) << page << " has no block marked <!-- example:" << name << " -->";
    }
    auto key = SigningKey::FromPem(blocks_["private-key"]);
    ASSERT_TRUE(key.ok()) << key.status().message();
    key_ = *key;
    auto pub = PublicKey::FromPem(blocks_["public-key"]);
    ASSERT_TRUE(pub.ok()) << pub.status().message();
    trusted_.Add(*pub);
    body_ = WithoutFinalNewline(blocks_["body"]);
    // The query of the request line, read as the service reads it.
    const std::string request = WithoutFinalNewline(blocks_["request"]);
    ASSERT_EQ(request.rfind("GET ", 0), 0u) << request;
    auto params = http_server::ParseQuery(request.substr(request.find('?') + 1));
    ASSERT_TRUE(params.ok()) << params.status().message();
    params_ = *params;
  }
  AnswerScope Scope() const { return server::QueryScope(params_); }
  // The Cincinnati-Signature value of the page's headers.
  std::string SignatureHeader() const {
    const std::string prefix = std::string(kSignatureHeader) + ": ";
    const std::string& headers = blocks_.at("headers");
    const size_t at = headers.find(prefix);
    if (at == std::string::npos) return "";
    return headers.substr(at + prefix.size(), headers.find('\n', at) - at - prefix.size());
  }

  std::map<std::string, std::string> blocks_;
  std::shared_ptr<const SigningKey> key_;
  TrustedKeys trusted_;
  std::string body_;
  Parameters params_;
};

TEST_F(SignedAnswersSpecTest, TheKeysAndTheKeyIdAreTheCodes) {
  EXPECT_EQ(key_->id() + "\n", blocks_["key-id"]);
  EXPECT_EQ(key_->PublicPem(), blocks_["public-key"]) << "the public half of the example's private key";
  EXPECT_NE(trusted_.Find(key_->id()), nullptr);
}

TEST_F(SignedAnswersSpecTest, TheStatementIsWhatTheCodeSignsForTheExample) {
  EXPECT_EQ(body_.size(), 383u) << "the size the page states";
  EXPECT_FALSE(params_.at("id").empty()) << "the example's request sends an id, which is not bound";
  EXPECT_EQ(SignatureStatement(kFacts, Scope(), Sha256Hex(body_)), blocks_["statement"]);
  EXPECT_EQ(blocks_["statement"].size(), 220u) << "the size the page states";
}

TEST_F(SignedAnswersSpecTest, TheHeadersAreWhatTheServiceSends) {
  auto header = SignAnswer({key_}, kFacts, Scope(), body_);
  ASSERT_TRUE(header.ok()) << header.status().message();
  EXPECT_EQ(SignatureHeader(), *header);
  // The service's own path: signed when it answers, valid an hour after the freshness.
  server::AnswerSigner signer({key_}, std::chrono::seconds(3600));
  const server::View view(body_);
  const auto lines = signer.HeadLines(view, Scope(), {.generation = kGeneration, .fresh_as_of = kFresh}, kSigned);
  ASSERT_TRUE(lines.error.ok()) << lines.error.message();
  EXPECT_EQ(WithLineFeeds(std::string(*lines.text)), blocks_["headers"]);
}

TEST_F(SignedAnswersSpecTest, TheCodeAcceptsTheExampleWithinTheValidityThePageStates) {
  const std::string header = SignatureHeader();
  auto check = [&](int64_t now, const AnswerScope& scope) {
    return CheckAnswerSignature(&header, body_, scope, trusted_, now, 0).verdict;
  };
  for (int64_t now : {kSigned - 300, kSigned, kExpires - 1}) EXPECT_EQ(check(now, Scope()), SignatureVerdict::kAccepted) << now;
  EXPECT_EQ(check(kSigned - 301, Scope()), SignatureVerdict::kExpired) << "signed in the future";
  EXPECT_EQ(check(kExpires, Scope()), SignatureVerdict::kExpired);
  AnswerScope other = Scope();
  other.channel = "fast-4.13";
  EXPECT_EQ(check(kSigned, other), SignatureVerdict::kInvalid) << "another channel";
  EXPECT_EQ(CheckAnswerSignature(&header, body_, Scope(), trusted_, kSigned, kGeneration + 1).verdict, SignatureVerdict::kRolledBack);
}

bool HaveOpenssl() { return std::system("command -v openssl >/dev/null 2>&1") == 0; }

// Runs `script` with sh in `dir`; its exit status, and what it printed in `out`.
int RunShell(const fs::path& dir, const std::string& script, std::string& out) {
  testing::WriteFile(dir / "script.sh", script);
  const int status = std::system(("cd '" + dir.string() + "' && sh script.sh > out.txt 2>&1").c_str());
  out = testing::ReadFile(dir / "out.txt");
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST_F(SignedAnswersSpecTest, TheOpensslCommandsVerifyTheExample) {
  if (!HaveOpenssl()) GTEST_SKIP() << "no openssl binary";
  testing::TempDir dir;
  std::string out;
  ASSERT_EQ(RunShell(dir.path(), blocks_["verify"], out), 0) << out;
  EXPECT_NE(out.find("Signature Verified Successfully"), std::string::npos) << out;
  // What the script verified is the page's example.
  EXPECT_EQ(testing::ReadFile(dir / "pub.pem"), blocks_["public-key"]);
  EXPECT_EQ(testing::ReadFile(dir / "body.json"), body_);
  EXPECT_EQ(testing::ReadFile(dir / "statement.txt"), blocks_["statement"]);
  // Signing the statement again with the example's key gives the header's signature.
  testing::WriteFile(dir / "key.pem", blocks_["private-key"]);
  ASSERT_EQ(RunShell(dir.path(), blocks_["sign"], out), 0) << out;
  EXPECT_TRUE(SignatureHeader().ends_with("; sig=" + key_->id() + ":" + WithoutFinalNewline(out))) << out;
}

TEST_F(SignedAnswersSpecTest, TheOpensslCommandsRefuseAnAlteredBody) {
  if (!HaveOpenssl()) GTEST_SKIP() << "no openssl binary";
  std::string script = blocks_["verify"];
  const size_t at = script.find("\"edges\":[[0,1]]");
  ASSERT_NE(at, std::string::npos);
  script.replace(at, 15, "\"edges\":[[1,0]]");
  testing::TempDir dir;
  std::string out;
  EXPECT_NE(RunShell(dir.path(), script, out), 0) << out;
  EXPECT_EQ(out.find("Signature Verified Successfully"), std::string::npos) << out;
}

}  // namespace
}  // namespace cincinnati
