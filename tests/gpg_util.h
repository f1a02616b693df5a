// A throwaway OpenPGP signer for tests: a fresh key in a temporary GnuPG home.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "test_util.h"

namespace cincinnati::testing {

namespace fs = std::filesystem;

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
  std::string home() const { return (dir_ / "home").string(); }
  std::string public_key() const { return ReadFile(dir_ / "keys/key.asc"); }
  // A binary signed message over the simple-signing payload for `digest`.
  std::string Sign(const std::string& digest) {
    return SignDocument(R"({"critical":{"image":{"docker-manifest-digest":")" + digest +
                        R"("},"type":"atomic container signature","identity":{"docker-reference":"example.com/graph-data:1"}},"optional":{}})");
  }
  // A binary signed message over any document (e.g. a signature payload that breaks the rules).
  std::string SignDocument(const std::string& document) {
    WriteFile(dir_ / "payload.json", document);
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

}  // namespace cincinnati::testing
