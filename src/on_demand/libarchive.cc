// libarchive's functions the project calls (image layers, graph-data tarballs), loaded
// on first use (env/shared_library.h).
#include <archive.h>
#include <archive_entry.h>

#include "on_demand/forward.h"

namespace {
constinit cincinnati::env::SharedLibrary libarchive("libarchive.so.13", "libarchive13");
using Archive = struct archive;
using Entry = struct archive_entry;
}  // namespace

CINCINNATI_FORWARD(libarchive, const char*, archive_error_string, (Archive * a), (a))
CINCINNATI_FORWARD(libarchive, Archive*, archive_read_new, (void), ())
CINCINNATI_FORWARD(libarchive, int, archive_read_support_filter_gzip, (Archive * a), (a))
CINCINNATI_FORWARD(libarchive, int, archive_read_support_format_tar, (Archive * a), (a))
CINCINNATI_FORWARD(libarchive, int, archive_read_open_memory, (Archive * a, const void* buffer, size_t size), (a, buffer, size))
CINCINNATI_FORWARD(libarchive, int, archive_read_next_header, (Archive * a, Entry** entry), (a, entry))
CINCINNATI_FORWARD(libarchive, la_ssize_t, archive_read_data, (Archive * a, void* buffer, size_t size), (a, buffer, size))
CINCINNATI_FORWARD(libarchive, int, archive_read_free, (Archive * a), (a))
CINCINNATI_FORWARD(libarchive, Archive*, archive_write_new, (void), ())
CINCINNATI_FORWARD(libarchive, int, archive_write_add_filter_gzip, (Archive * a), (a))
CINCINNATI_FORWARD(libarchive, int, archive_write_set_format_pax_restricted, (Archive * a), (a))
CINCINNATI_FORWARD(libarchive, int, archive_write_set_bytes_in_last_block, (Archive * a, int bytes), (a, bytes))
CINCINNATI_FORWARD(libarchive, int, archive_write_set_filter_option, (Archive * a, const char* module, const char* option, const char* value),
                   (a, module, option, value))
CINCINNATI_FORWARD(libarchive, int, archive_write_open_memory, (Archive * a, void* buffer, size_t size, size_t* used),
                   (a, buffer, size, used))
CINCINNATI_FORWARD(libarchive, int, archive_write_header, (Archive * a, Entry* entry), (a, entry))
CINCINNATI_FORWARD(libarchive, la_ssize_t, archive_write_data, (Archive * a, const void* buffer, size_t size), (a, buffer, size))
CINCINNATI_FORWARD(libarchive, int, archive_write_close, (Archive * a), (a))
CINCINNATI_FORWARD(libarchive, int, archive_write_free, (Archive * a), (a))
CINCINNATI_FORWARD(libarchive, Entry*, archive_entry_new, (void), ())
CINCINNATI_FORWARD(libarchive, void, archive_entry_free, (Entry * e), (e))
CINCINNATI_FORWARD(libarchive, const char*, archive_entry_pathname, (Entry * e), (e))
CINCINNATI_FORWARD(libarchive, la_int64_t, archive_entry_size, (Entry * e), (e))
CINCINNATI_FORWARD(libarchive, __LA_MODE_T, archive_entry_filetype, (Entry * e), (e))
CINCINNATI_FORWARD(libarchive, void, archive_entry_set_filetype, (Entry * e, unsigned int type), (e, type))
CINCINNATI_FORWARD(libarchive, void, archive_entry_set_pathname, (Entry * e, const char* path), (e, path))
CINCINNATI_FORWARD(libarchive, void, archive_entry_set_perm, (Entry * e, __LA_MODE_T perm), (e, perm))
CINCINNATI_FORWARD(libarchive, void, archive_entry_set_size, (Entry * e, la_int64_t size), (e, size))
CINCINNATI_FORWARD(libarchive, void, archive_entry_set_mtime, (Entry * e, time_t seconds, long nanoseconds), (e, seconds, nanoseconds))
