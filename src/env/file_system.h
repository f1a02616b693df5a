// FileSystem: the operating system's files, behind an interface that tests swap (in
// the spirit of LevelDB's Env). Everything that writes state the agent or the operator
// relies on goes through it, so that a full disk or a failing device is a tested case.
//
// Contract:
// - Every write is checked to the end: WritableFile::Append checks each write(2),
//   Sync fsyncs, Close reports close(2)'s error. A file that was not closed cleanly
//   was not written.
// - Errors are Status values naming the file and the operation: NoSpace for ENOSPC
//   and EDQUOT (a full disk is never reported as anything else), IoError for the rest.
// - ReadFile reads only regular files (after symlinks), up to a stated size: a
//   directory, FIFO, socket or device is an error naming what it is, never read, and a
//   file over the limit is TooLarge naming both sizes, read no further than the limit.
// - WriteFileDurably: a crash at any moment leaves the old or the new content, never a
//   mix; when it returns OK the new content survives a crash. An error from its last
//   step (the directory's fsync) means the new content is in place but may not survive
//   a crash: callers treat the write as failed, and redoing it is harmless.
//
// Thread-safety: DefaultFileSystem() is shared and thread-safe; a WritableFile is used
// by one thread at a time. Nothing throws.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace cincinnati::env {

class WritableFile {
 public:
  virtual ~WritableFile() = default;  // closes without reporting: call Close()
  virtual Status Append(std::string_view bytes) = 0;
  virtual Status Sync() = 0;
  virtual Status Close() = 0;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  // Creates or truncates `path` (mode 0600 unless `mode` says otherwise).
  virtual Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::filesystem::path& path, int mode = 0600) = 0;
  virtual Status Rename(const std::filesystem::path& from, const std::filesystem::path& to) = 0;
  // fsync of a directory (or of a file), so that renames and new entries survive a crash.
  virtual Status SyncPath(const std::filesystem::path& path) = 0;
};

// The real one (POSIX).
FileSystem& DefaultFileSystem();

// A Status for the errno of a failed `operation` on `path`: NoSpace for ENOSPC and
// EDQUOT, IoError otherwise.
Status ErrnoStatus(std::string_view operation, const std::filesystem::path& path, int error);

// Writes `bytes` to `path` so that a crash leaves the old or the new content: a
// temporary file beside it (".tmp-<pid>"), fsync, close, rename, fsync of the directory.
// The temporary file is removed on failure.
Status WriteFileDurably(const std::filesystem::path& path, std::string_view bytes,
                        FileSystem& fs = DefaultFileSystem());

// Writes a whole new file (create or truncate) and closes it, checking every step; no
// fsync (the caller syncs a tree of such files at once, then renames it into place).
Status WriteNewFile(const std::filesystem::path& path, std::string_view bytes, FileSystem& fs = DefaultFileSystem(),
                    int mode = 0600);

// The marker of WriteFileDurably's temporary files: "<name>.tmp-<pid>".
inline constexpr std::string_view kTempMarker = ".tmp-";

// Reads the regular file at `path` (symlinks followed), at most `max_bytes`. Errors
// name `display` (the path when empty): NotFound (missing), InvalidArgument (not a
// regular file, or a symlink loop), TooLarge (over the limit), IoError.
Result<std::string> ReadFile(const std::filesystem::path& path, size_t max_bytes, std::string_view display = {});

// An exclusive lock on a file (flock), held until the object is destroyed or Release()
// is called: one process per state directory. The holder's process id is written into
// the file, so that a refused second process can say who holds it.
class FileLock {
 public:
  // FailedPrecondition-like InvalidArgument naming the holder's pid when another
  // process holds the lock; IoError when the file cannot be opened.
  static Result<std::unique_ptr<FileLock>> Acquire(const std::filesystem::path& path);
  ~FileLock();
  void Release();

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_;
};

// "1.5 MiB", "512 bytes": sizes in messages.
std::string HumanBytes(uint64_t bytes);

}  // namespace cincinnati::env
