// OpenPGP verification of image digests with real GnuPG keys: the upstream fixture,
// and keys made in a temporary GnuPG home.
#include <gtest/gtest.h>

#include "registry/signature.h"
#include "gpg_util.h"
#include "test_util.h"

namespace cincinnati::registry {
namespace {

namespace fs = std::filesystem;
using cincinnati::testing::ReadFile;
using cincinnati::testing::TempDir;
using cincinnati::testing::WriteFile;
using cincinnati::testing::Signer;

const fs::path kFixture = cincinnati::testing::Fixtures() / "signatures";
constexpr char kFixtureDigest[] = "sha256:d33abd703ea76813f8dbd9518ff46d3f95ac23f364f5b6417d9fa2593aa72a1a";

TEST(SignatureTest, UpstreamFixtureVerifiesWithItsKeyAndDigest) {
  TempDir keys;
  fs::copy(kFixture / "hongkliu.asc", keys / "hongkliu.asc");
  std::string signature = ReadFile(kFixture / "signature-3");
  ASSERT_EQ(signature.size(), 695u);
  auto payload = VerifyImageSignature(signature, keys.path().string(), kFixtureDigest);
  ASSERT_TRUE(payload.ok()) << payload.status().message();
  EXPECT_NE(payload->find("atomic container signature"), std::string::npos);
  auto wrong_digest = VerifyImageSignature(signature, keys.path().string(), "sha256:" + std::string(64, '0'));
  ASSERT_FALSE(wrong_digest.ok());
  EXPECT_NE(wrong_digest.status().message().find("not for sha256:000"), std::string::npos);
  Signer other("other");
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(VerifyImageSignature(signature, other.keys(), kFixtureDigest).ok());
}

TEST(SignatureTest, OwnKeyGoodWrongKeyTamperedAndMissing) {
  Signer signer("graph-data");
  Signer stranger("stranger");
  ASSERT_TRUE(signer.ok() && stranger.ok());
  const std::string digest = "sha256:" + std::string(64, 'a');
  std::string signature = signer.Sign(digest);
  EXPECT_TRUE(VerifyImageSignature(signature, signer.keys(), digest).ok());
  EXPECT_FALSE(VerifyImageSignature(signature, stranger.keys(), digest).ok());            // wrong key
  EXPECT_FALSE(VerifyImageSignature(signature, signer.keys(), "sha256:" + std::string(64, 'b')).ok());  // tampered
  std::string flipped = signature;
  flipped[flipped.size() / 2] ^= 0x20;
  EXPECT_FALSE(VerifyImageSignature(flipped, signer.keys(), digest).ok());                // corrupted bytes
  EXPECT_FALSE(VerifyImageSignature("", signer.keys(), digest).ok());                     // missing
  TempDir empty;
  EXPECT_FALSE(VerifyImageSignature(signature, empty.path().string(), digest).ok());      // no keys
}

TEST(SignatureTest, StoreLayout) {
  EXPECT_EQ(SignatureLocation("https://mirror.example.com/sigs/", "sha256:abc", 3),
            "https://mirror.example.com/sigs/sha256=abc/signature-3");
  EXPECT_EQ(SignatureLocation("/srv/sigs", "sha256:abc", 1), "/srv/sigs/sha256=abc/signature-1");
}

}  // namespace
}  // namespace cincinnati::registry
