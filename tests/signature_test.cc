// OpenPGP verification of image digests with real GnuPG keys: the upstream fixture,
// and keys made in a temporary GnuPG home.
#include <gtest/gtest.h>

#include "registry/signature.h"
#include "test_util.h"

namespace cincinnati::registry {
namespace {

namespace fs = std::filesystem;
using cincinnati::testing::ReadFile;
using cincinnati::testing::TempDir;
using cincinnati::testing::WriteFile;

const fs::path kFixture = cincinnati::testing::Fixtures() / "signatures";
constexpr char kFixtureDigest[] = "sha256:d33abd703ea76813f8dbd9518ff46d3f95ac23f364f5b6417d9fa2593aa72a1a";

// A GnuPG home with one fresh signing key, its public key exported to keys/.
class Signer {
 public:
  explicit Signer(const std::string& name) {
    fs::create_directories(dir_ / "home");
    fs::permissions(dir_ / "home", fs::perms::owner_all);
    fs::create_directories(dir_ / "keys");
    std::string gpg = "gpg --homedir " + (dir_ / "home").string() + " --batch --pinentry-mode loopback --passphrase ''";
    ok_ = std::system((gpg + " --quick-gen-key '" + name + " <" + name + "@example.com>' ed25519 sign 1d >/dev/null 2>&1").c_str()) == 0 &&
          std::system((gpg + " --armor --export > " + (dir_ / "keys/key.asc").string() + " 2>/dev/null").c_str()) == 0;
  }
  ~Signer() { (void)std::system(("gpgconf --homedir " + (dir_ / "home").string() + " --kill all >/dev/null 2>&1").c_str()); }
  bool ok() const { return ok_; }
  std::string keys() const { return (dir_ / "keys").string(); }
  // A binary signed message over the simple-signing payload for `digest`.
  std::string Sign(const std::string& digest) {
    WriteFile(dir_ / "payload.json",
              R"({"critical":{"image":{"docker-manifest-digest":")" + digest +
                  R"("},"type":"atomic container signature","identity":{"docker-reference":"example.com/graph-data:1"}},"optional":{}})");
    std::string cmd = "gpg --homedir " + (dir_ / "home").string() +
                      " --batch --yes --pinentry-mode loopback --passphrase '' --sign -o " + (dir_ / "sig").string() +
                      " " + (dir_ / "payload.json").string() + " >/dev/null 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
    return ReadFile(dir_ / "sig");
  }

 private:
  TempDir dir_;
  bool ok_ = false;
};

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
