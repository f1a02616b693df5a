// libdeflate's functions the project calls (the CRC-32 of gzip answers assembled from
// pieces: zlib's crc32 works a byte at a time on short runs, libdeflate's folds with
// carry-less multiplication, 3-5 times as fast here), loaded on first use
// (env/shared_library.h).
#include <libdeflate.h>

#include "on_demand/forward.h"

namespace {
constinit cincinnati::env::SharedLibrary libdeflate("libdeflate.so.0", "libdeflate0");
}  // namespace

CINCINNATI_FORWARD(libdeflate, uint32_t, libdeflate_crc32, (uint32_t crc, const void* buffer, size_t len), (crc, buffer, len))
