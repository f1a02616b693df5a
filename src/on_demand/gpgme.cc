// GPGME's functions the project calls, loaded on first use (env/shared_library.h).
// gpgme_check_version is a macro over gpgme_check_version_internal; gpgme_error is
// inline (libgpg-error's), so neither needs the library.
#include <gpgme.h>

#include "on_demand/forward.h"

namespace {
constinit cincinnati::env::SharedLibrary libgpgme("libgpgme.so.11", "libgpgme11");
}  // namespace

CINCINNATI_FORWARD(libgpgme, const char*, gpgme_check_version_internal, (const char* required, size_t offset),
                   (required, offset))
CINCINNATI_FORWARD(libgpgme, const char*, gpgme_strerror, (gpgme_error_t error), (error))
CINCINNATI_FORWARD(libgpgme, gpgme_error_t, gpgme_new, (gpgme_ctx_t * ctx), (ctx))
CINCINNATI_FORWARD(libgpgme, void, gpgme_release, (gpgme_ctx_t ctx), (ctx))
CINCINNATI_FORWARD(libgpgme, void, gpgme_set_armor, (gpgme_ctx_t ctx, int yes), (ctx, yes))
CINCINNATI_FORWARD(libgpgme, void, gpgme_set_offline, (gpgme_ctx_t ctx, int yes), (ctx, yes))
CINCINNATI_FORWARD(libgpgme, gpgme_error_t, gpgme_set_pinentry_mode, (gpgme_ctx_t ctx, gpgme_pinentry_mode_t mode), (ctx, mode))
CINCINNATI_FORWARD(libgpgme, void, gpgme_set_passphrase_cb, (gpgme_ctx_t ctx, gpgme_passphrase_cb_t cb, void* hook),
                   (ctx, cb, hook))
CINCINNATI_FORWARD(libgpgme, gpgme_error_t, gpgme_set_locale, (gpgme_ctx_t ctx, int category, const char* value),
                   (ctx, category, value))
CINCINNATI_FORWARD(libgpgme, gpgme_error_t, gpgme_ctx_set_engine_info,
                   (gpgme_ctx_t ctx, gpgme_protocol_t protocol, const char* file_name, const char* home_dir),
                   (ctx, protocol, file_name, home_dir))
CINCINNATI_FORWARD(libgpgme, gpgme_error_t, gpgme_signers_add, (gpgme_ctx_t ctx, const gpgme_key_t key), (ctx, key))
CINCINNATI_FORWARD(libgpgme, int, gpgme_io_writen, (int fd, const void* buffer, size_t count), (fd, buffer, count))
CINCINNATI_FORWARD(libgpgme, gpgme_error_t, gpgme_data_new, (gpgme_data_t * data), (data))
CINCINNATI_FORWARD(libgpgme, gpgme_error_t, gpgme_data_new_from_mem, (gpgme_data_t * data, const char* buffer, size_t size, int copy),
                   (data, buffer, size, copy))
CINCINNATI_FORWARD(libgpgme, void, gpgme_data_release, (gpgme_data_t data), (data))
CINCINNATI_FORWARD(libgpgme, char*, gpgme_data_release_and_get_mem, (gpgme_data_t data, size_t* length), (data, length))
CINCINNATI_FORWARD(libgpgme, void, gpgme_free, (void* buffer), (buffer))
CINCINNATI_FORWARD(libgpgme, gpgme_error_t, gpgme_get_key, (gpgme_ctx_t ctx, const char* fingerprint, gpgme_key_t* key, int secret),
                   (ctx, fingerprint, key, secret))
CINCINNATI_FORWARD(libgpgme, void, gpgme_key_unref, (gpgme_key_t key), (key))
CINCINNATI_FORWARD(libgpgme, gpgme_error_t, gpgme_op_sign, (gpgme_ctx_t ctx, gpgme_data_t plain, gpgme_data_t sig, gpgme_sig_mode_t mode),
                   (ctx, plain, sig, mode))
CINCINNATI_FORWARD(libgpgme, gpgme_error_t, gpgme_op_verify,
                   (gpgme_ctx_t ctx, gpgme_data_t sig, gpgme_data_t signed_text, gpgme_data_t plaintext),
                   (ctx, sig, signed_text, plaintext))
CINCINNATI_FORWARD(libgpgme, gpgme_verify_result_t, gpgme_op_verify_result, (gpgme_ctx_t ctx), (ctx))
CINCINNATI_FORWARD(libgpgme, gpgme_error_t, gpgme_op_import, (gpgme_ctx_t ctx, gpgme_data_t keydata), (ctx, keydata))
CINCINNATI_FORWARD(libgpgme, gpgme_import_result_t, gpgme_op_import_result, (gpgme_ctx_t ctx), (ctx))
