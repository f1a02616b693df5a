// Fresh Ed25519 keys for the signed-answer tests, made with OpenSSL as
// `openssl genpkey -algorithm ed25519` would, written as PEM files when asked.
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <filesystem>
#include <string>

#include "core/answer_signature.h"
#include "test_util.h"

namespace cincinnati::testing {

// A new private key as PEM ("-----BEGIN PRIVATE KEY-----").
inline std::string NewSigningKeyPem() {
  EVP_PKEY* pkey = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, pkey, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<size_t>(n));
  BIO_free(bio);
  EVP_PKEY_free(pkey);
  return pem;
}

// A key pair on disk: `<dir>/<name>.key` (private) and `<trusted>/<name>.pem` (public).
struct KeyFiles {
  std::filesystem::path private_key, public_key;
  std::string id;
};
inline KeyFiles WriteKeyPair(const std::filesystem::path& dir, const std::filesystem::path& trusted, const std::string& name) {
  const std::string pem = NewSigningKeyPem();
  auto key = SigningKey::FromPem(pem);
  KeyFiles files{dir / (name + ".key"), trusted / (name + ".pem"), key.ok() ? (*key)->id() : ""};
  WriteFile(files.private_key, pem);
  WriteFile(files.public_key, key.ok() ? (*key)->PublicPem() : "");
  return files;
}

}  // namespace cincinnati::testing
