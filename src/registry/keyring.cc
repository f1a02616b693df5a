#include "registry/keyring.h"

#include <gpgme.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <utility>

#include <fmt/format.h>

#include "env/file_system.h"

namespace cincinnati::registry {
namespace {

namespace fs = std::filesystem;

std::string Err(gpgme_error_t e) { return gpgme_strerror(e); }

void InitGpgme() {
  static std::once_flag once;
  std::call_once(once, [] {
    gpgme_check_version(nullptr);
    gpgme_set_locale(nullptr, LC_CTYPE, "C");
  });
}

struct Context {
  gpgme_ctx_t ctx = nullptr;
  Context() = default;
  Context(Context&& other) noexcept : ctx(std::exchange(other.ctx, nullptr)) {}
  Context& operator=(Context&&) = delete;
  ~Context() {
    if (ctx) gpgme_release(ctx);
  }
};

struct Data {
  gpgme_data_t data = nullptr;
  ~Data() {
    if (data) gpgme_data_release(data);
  }
  std::string Take() {
    size_t size = 0;
    char* bytes = gpgme_data_release_and_get_mem(data, &size);
    data = nullptr;
    std::string out(bytes ? bytes : "", bytes ? size : 0);
    gpgme_free(bytes);
    return out;
  }
};

// A context bound to `home` (empty: GnuPG's default home), offline, binary output.
Result<Context> NewContext(const std::string& home) {
  InitGpgme();
  Context c;
  if (auto e = gpgme_new(&c.ctx)) return Status::Internal("gpgme_new: " + Err(e));
  if (auto e = gpgme_ctx_set_engine_info(c.ctx, GPGME_PROTOCOL_OpenPGP, nullptr, home.empty() ? nullptr : home.c_str())) {
    return Status::Internal("GnuPG engine: " + Err(e));
  }
  gpgme_set_offline(c.ctx, 1);  // never fetch keys from the network
  gpgme_set_armor(c.ctx, 0);
  return c;
}

std::string SignatureProblem(gpgme_signature_t s) {
  const std::string by = s->fpr ? s->fpr : "an unknown key";
  switch (gpg_err_code(s->status)) {
    case GPG_ERR_NO_PUBKEY: return fmt::format("signed by {}, which is not in the keyring", by);
    case GPG_ERR_BAD_SIGNATURE: return fmt::format("the signature by {} does not match the signed data", by);
    case GPG_ERR_SIG_EXPIRED: return fmt::format("the signature by {} expired at {}", by, s->exp_timestamp);
    case GPG_ERR_CERT_REVOKED: return fmt::format("the key {} has been revoked", by);
    default: return fmt::format("the signature by {} is not valid: {}", by, Err(s->status));
  }
}

}  // namespace

Result<std::unique_ptr<Keyring>> Keyring::Open(std::string name, const std::vector<std::string>& key_blobs) {
  auto home = env::DefaultFileSystem().CreateUniqueDirectory(env::TempDirectory() / "cincinnati-keyring-");
  if (!home.ok()) return Status::IoError(fmt::format("keyring {}: cannot create a GnuPG home", name));
  std::unique_ptr<Keyring> keyring(new Keyring(std::move(name), home->string()));
  // Public keys and signatures need no gpg-agent: none is started, so none can outlive
  // this keyring (a process killed -9 could not stop it, and it is a daemon of its own).
  CINCINNATI_RETURN_IF_ERROR(env::WriteFileDurably((fs::path(keyring->home_) / "gpg.conf").string(), "no-autostart\n")
                                 .WithContext(fmt::format("keyring {}", keyring->name_)));
  CINCINNATI_ASSIGN_OR_RETURN(Context c, NewContext(keyring->home_));
  for (const std::string& blob : key_blobs) {
    Data d;
    if (gpgme_data_new_from_mem(&d.data, blob.data(), blob.size(), 0)) continue;
    if (gpgme_op_import(c.ctx, d.data)) continue;
    gpgme_import_result_t r = gpgme_op_import_result(c.ctx);
    for (gpgme_import_status_t i = r ? r->imports : nullptr; i; i = i->next) {
      if (i->result == 0 && i->fpr) keyring->fingerprints_.emplace_back(i->fpr);
    }
  }
  if (keyring->fingerprints_.empty()) {
    return Status::InvalidArgument(fmt::format("keyring {}: no OpenPGP public key could be read", keyring->name_));
  }
  return keyring;
}

Result<std::unique_ptr<Keyring>> Keyring::FromDirectory(std::string name, const std::string& dir) {
  std::vector<std::string> blobs;
  auto entries = env::DefaultFileSystem().ListDirectory(dir);
  if (!entries.ok()) return Status::IoError(fmt::format("public keys {}: {}", dir, entries.status().message()));
  for (const env::DirectoryEntry& entry : *entries) {
    if (entry.type != env::FileType::kRegular) continue;
    CINCINNATI_ASSIGN_OR_RETURN(std::string blob, env::ReadFile(entry.path, size_t{1} << 20));  // a keyring is KiBs
    blobs.push_back(std::move(blob));
  }
  return Open(std::move(name), blobs);
}

Keyring::~Keyring() {
  // No gpg-agent runs for this home (its gpg.conf says no-autostart): removing it is all.
  env::RemoveLeftover(env::DefaultFileSystem(), home_, "a temporary GnuPG home");
}

Result<VerifiedMessage> Keyring::Verify(std::string_view signed_message) const {
  if (signed_message.substr(0, 34) == "-----BEGIN PGP SIGNED MESSAGE-----") {
    return Status::InvalidArgument("a clear-signed text, not an OpenPGP signed message");
  }
  CINCINNATI_ASSIGN_OR_RETURN(Context c, NewContext(home_));
  Data sig, plain;
  if (gpgme_data_new_from_mem(&sig.data, signed_message.data(), signed_message.size(), 0) || gpgme_data_new(&plain.data)) {
    return Status::Internal("gpgme: out of memory");
  }
  if (auto e = gpgme_op_verify(c.ctx, sig.data, nullptr, plain.data)) {
    return Status::InvalidArgument("not an OpenPGP signed message: " + Err(e));
  }
  gpgme_verify_result_t result = gpgme_op_verify_result(c.ctx);
  if (!result || !result->signatures) return Status::InvalidArgument("not an OpenPGP signed message: no signature");
  std::string fingerprint;
  for (gpgme_signature_t s = result->signatures; s; s = s->next) {
    const auto code = gpg_err_code(s->status);
    // A key that expired after signing still vouches for what it signed (the CVO's rule).
    if (code != GPG_ERR_NO_ERROR && code != GPG_ERR_KEY_EXPIRED) {
      return Status::InvalidArgument(fmt::format("keyring {}: {}", name_, SignatureProblem(s)));
    }
    if (fingerprint.empty() && s->fpr) fingerprint = s->fpr;
  }
  return VerifiedMessage{plain.Take(), std::move(fingerprint)};
}

Result<std::string> SignMessage(std::string_view payload, const std::string& gnupg_home, const std::string& key) {
  CINCINNATI_ASSIGN_OR_RETURN(Context c, NewContext(gnupg_home));
  // Keys without a passphrase sign without a pinentry.
  gpgme_set_pinentry_mode(c.ctx, GPGME_PINENTRY_MODE_LOOPBACK);
  gpgme_set_passphrase_cb(
      c.ctx, [](void*, const char*, const char*, int, int fd) -> gpgme_error_t {
        return gpgme_io_writen(fd, "\n", 1) == 0 ? 0 : gpgme_error(GPG_ERR_CANCELED);
      },
      nullptr);
  if (!key.empty()) {
    gpgme_key_t k = nullptr;
    if (auto e = gpgme_get_key(c.ctx, key.c_str(), &k, /*secret=*/1)) {
      return Status::NotFound(fmt::format("no secret key '{}' in {}: {}", key, gnupg_home.empty() ? "the GnuPG home" : gnupg_home, Err(e)));
    }
    gpgme_error_t e = gpgme_signers_add(c.ctx, k);
    gpgme_key_unref(k);
    if (e) return Status::Internal("gpgme_signers_add: " + Err(e));
  }
  Data in, out;
  if (gpgme_data_new_from_mem(&in.data, payload.data(), payload.size(), 0) || gpgme_data_new(&out.data)) {
    return Status::Internal("gpgme: out of memory");
  }
  if (auto e = gpgme_op_sign(c.ctx, in.data, out.data, GPGME_SIG_MODE_NORMAL)) {
    return Status::InvalidArgument("signing failed: " + Err(e));
  }
  return out.Take();
}

}  // namespace cincinnati::registry
