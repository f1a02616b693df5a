#include "core/sha256.h"

#include <openssl/evp.h>

namespace cincinnati {

namespace {

// One fetched algorithm and one context per thread, freed at thread exit.
struct ThreadDigest {
  EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~ThreadDigest() {
    EVP_MD_CTX_free(ctx);
    EVP_MD_free(md);
  }
};

}  // namespace

void Sha256(std::string_view data, unsigned char (&digest)[32]) {
  thread_local ThreadDigest t;
  unsigned int len = 0;
  if (t.md == nullptr || t.ctx == nullptr || !EVP_DigestInit_ex2(t.ctx, t.md, nullptr) ||
      !EVP_DigestUpdate(t.ctx, data.data(), data.size()) || !EVP_DigestFinal_ex(t.ctx, digest, &len) || len != 32) {
    EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr);  // the slow way
  }
}

std::string Sha256Hex(std::string_view data) {
  static constexpr char kHex[] = "0123456789abcdef";
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  std::string out;
  out.reserve(len * 2);
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(kHex[md[i] >> 4]);
    out.push_back(kHex[md[i] & 0xf]);
  }
  return out;
}

}  // namespace cincinnati
