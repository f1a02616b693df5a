#include "registry/signature.h"

#include <gpgme.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <random>

#include <fmt/format.h>
#include <simdjson.h>

namespace cincinnati::registry {
namespace {

namespace fs = std::filesystem;

std::string Err(gpgme_error_t e) { return gpgme_strerror(e); }

// A GnuPG home that exists for one verification and is removed afterwards.
class TemporaryHome {
 public:
  TemporaryHome() {
    std::random_device rd;
    path_ = fs::temp_directory_path() / fmt::format("cincinnati-gnupg-{}-{}", ::getpid(), rd());
    fs::create_directories(path_);
    fs::permissions(path_, fs::perms::owner_all);
  }
  ~TemporaryHome() {
    // Stop the agent gpg may have started for this home, then remove it.
    std::string cmd = "gpgconf --homedir '" + path_.string() + "' --kill all >/dev/null 2>&1";
    (void)std::system(cmd.c_str());
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string path() const { return path_.string(); }

 private:
  fs::path path_;
};

struct Context {
  gpgme_ctx_t ctx = nullptr;
  ~Context() {
    if (ctx) gpgme_release(ctx);
  }
};

struct Data {
  gpgme_data_t data = nullptr;
  ~Data() {
    if (data) gpgme_data_release(data);
  }
};

}  // namespace

std::string SignatureLocation(const std::string& base, const std::string& digest, int index) {
  std::string segment = digest;
  if (size_t colon = segment.find(':'); colon != std::string::npos) segment[colon] = '=';
  std::string prefix = base;
  if (!prefix.empty() && prefix.back() != '/') prefix += '/';
  return fmt::format("{}{}/signature-{}", prefix, segment, index);
}

Result<std::string> VerifyImageSignature(const std::string& signature, const std::string& public_keys_dir,
                                         const std::string& expected_digest) {
  static std::once_flag init;
  std::call_once(init, [] { gpgme_check_version(nullptr); });
  TemporaryHome home;
  Context c;
  if (auto e = gpgme_new(&c.ctx)) return Status::Internal("gpgme_new: " + Err(e));
  if (auto e = gpgme_ctx_set_engine_info(c.ctx, GPGME_PROTOCOL_OpenPGP, nullptr, home.path().c_str())) {
    return Status::Internal("gpgme engine: " + Err(e));
  }
  // Import every key file of the directory.
  std::error_code ec;
  size_t imported = 0;
  for (const auto& entry : fs::directory_iterator(public_keys_dir, ec)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::string key((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Data d;
    if (gpgme_data_new_from_mem(&d.data, key.data(), key.size(), 0)) continue;
    if (gpgme_op_import(c.ctx, d.data)) continue;
    gpgme_import_result_t r = gpgme_op_import_result(c.ctx);
    if (r) imported += static_cast<size_t>(r->imported + r->unchanged);
  }
  if (ec) return Status::IoError(fmt::format("public keys {}: {}", public_keys_dir, ec.message()));
  if (imported == 0) return Status::InvalidArgument(fmt::format("no public key could be imported from {}", public_keys_dir));

  Data sig, plain;
  gpgme_data_new_from_mem(&sig.data, signature.data(), signature.size(), 0);
  gpgme_data_new(&plain.data);
  if (auto e = gpgme_op_verify(c.ctx, sig.data, nullptr, plain.data)) {
    return Status::InvalidArgument("not a valid OpenPGP signed message: " + Err(e));
  }
  gpgme_verify_result_t result = gpgme_op_verify_result(c.ctx);
  bool good = false;
  std::string why = "no signature";
  for (gpgme_signature_t s = result ? result->signatures : nullptr; s; s = s->next) {
    if (gpg_err_code(s->status) == GPG_ERR_NO_ERROR) {
      good = true;
      break;
    }
    why = fmt::format("signature by {} is not valid with the given keys: {}", s->fpr ? s->fpr : "?", Err(s->status));
  }
  if (!good) return Status::InvalidArgument(why);

  size_t size = 0;
  char* bytes = gpgme_data_release_and_get_mem(plain.data, &size);
  plain.data = nullptr;
  std::string payload(bytes, size);
  gpgme_free(bytes);
  simdjson::dom::parser parser;
  std::string_view digest;
  if (parser.parse(payload)["critical"]["image"]["docker-manifest-digest"].get_string().get(digest)) {
    return Status::InvalidArgument("signed payload has no critical.image.docker-manifest-digest");
  }
  if (digest != expected_digest) {
    return Status::InvalidArgument(
        fmt::format("signature is for {}, not for {}", std::string(digest), expected_digest));
  }
  return payload;
}

}  // namespace cincinnati::registry
