// FileSystem: the operating system's files, behind an interface that tests swap (in
// the spirit of LevelDB's Env). Everything that writes state the agent or the operator
// relies on goes through it, so that a full disk or a failing device is a tested case;
// and so does every read, listing, query and removal outside src/env, so that what the
// programs do to files is decided here (tests/env/env_rules_test.cc holds the line).
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
// - Queries and removals (Stat, ListDirectory, ListTree, Remove*, CreateDirectories)
//   follow symlinks for what an entry is, never recurse through a symlinked directory,
//   and treat a missing path as the answer (kMissing; removing it is OK), not an error.
// - WriteFileDurably: a crash at any moment leaves the old or the new content, never a
//   mix; when it returns OK the new content survives a crash. An error from its last
//   step (the directory's fsync) means the new content is in place but may not survive
//   a crash: callers treat the write as failed, and redoing it is harmless.
//
// Thread-safety: DefaultFileSystem() is shared and thread-safe; a WritableFile is used
// by one thread at a time. Nothing throws.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace cincinnati::env {

class WritableFile {
 public:
  virtual ~WritableFile() = default;  // closes without reporting: call Close()
  virtual Status Append(std::string_view bytes) = 0;
  virtual Status Sync() = 0;
  virtual Status Close() = 0;
};

// What a path is, after symlinks; kMissing also when it cannot be examined at all.
enum class FileType { kMissing, kRegular, kDirectory, kOther };

struct FileInfo {
  FileType type = FileType::kMissing;
  uint64_t size = 0;  // regular files
  uint64_t inode = 0;
  std::chrono::system_clock::time_point modified, changed;  // mtime, ctime
  bool exists() const { return type != FileType::kMissing; }
  bool is_regular() const { return type == FileType::kRegular; }
  bool is_directory() const { return type == FileType::kDirectory; }
};

struct DirectoryEntry {
  std::filesystem::path path;      // the listed directory's path / relative
  std::filesystem::path relative;  // the entry's path below the listed directory
  FileType type = FileType::kMissing;  // after symlinks (kMissing: a dangling one)
  bool is_symlink = false;
};

// The writes are what a test fakes (a full disk); the rest has the real filesystem's
// implementation here, which a fake inherits unless it overrides it too.
class FileSystem {
 public:
  virtual ~FileSystem() = default;
  // Creates or truncates `path` (mode 0600 unless `mode` says otherwise).
  virtual Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::filesystem::path& path, int mode = 0600) = 0;
  virtual Status Rename(const std::filesystem::path& from, const std::filesystem::path& to) = 0;
  // fsync of a directory (or of a file), so that renames and new entries survive a crash.
  virtual Status SyncPath(const std::filesystem::path& path) = 0;

  // env::ReadFile (below), through this interface.
  virtual Result<std::string> ReadFile(const std::filesystem::path& path, size_t max_bytes, std::string_view display = {});
  // Whatever `path` opens as, read to its end, at most `max_bytes`: FIFOs and devices
  // too (waiting for a writer and for the end), for a command's FILE argument such as
  // <(...). NotFound when it cannot be opened, IoError when a read fails, TooLarge.
  virtual Result<std::string> ReadStream(const std::filesystem::path& path, size_t max_bytes);
  virtual FileInfo Stat(const std::filesystem::path& path);
  bool Exists(const std::filesystem::path& path) { return Stat(path).exists(); }
  bool IsDirectory(const std::filesystem::path& path) { return Stat(path).is_directory(); }
  bool IsRegularFile(const std::filesystem::path& path) { return Stat(path).is_regular(); }
  // Whether this process may execute `path` (access(2), X_OK).
  virtual bool IsExecutable(const std::filesystem::path& path);
  // The entries of `dir` (not "." and ".."), in the directory's order. NotFound when it
  // is missing, IoError when it cannot be read (also part way).
  virtual Result<std::vector<DirectoryEntry>> ListDirectory(const std::filesystem::path& dir);
  // Every entry under `dir`, recursively, each directory before what it holds; errors
  // as ListDirectory's.
  virtual Result<std::vector<DirectoryEntry>> ListTree(const std::filesystem::path& dir);
  // mkdir -p; OK when it is a directory already.
  virtual Status CreateDirectories(const std::filesystem::path& dir);
  // A file (or an empty directory, or a symlink itself); OK when missing.
  virtual Status RemoveFile(const std::filesystem::path& path);
  // rm -rf; OK when missing.
  virtual Status RemoveTree(const std::filesystem::path& path);
  // A new directory with a unique name: `prefix` followed by six random characters
  // (mkdtemp); its path.
  virtual Result<std::filesystem::path> CreateUniqueDirectory(const std::filesystem::path& prefix);
};

// The real one (POSIX).
FileSystem& DefaultFileSystem();

// A Status for the errno of a failed `operation` on `path`: NoSpace for ENOSPC and
// EDQUOT, IoError otherwise.
Status ErrnoStatus(std::string_view operation, const std::filesystem::path& path, int error);

// The mode of a file written for the user to use elsewhere (a picture, an export, a
// signature to publish): the process's umask decides, as it does for `cp`. State and
// keys keep the default 0600.
inline constexpr int kUserFileMode = 0666;

// Writes `bytes` to `path` so that a crash leaves the old or the new content: a
// temporary file beside it (".tmp-<pid>"), fsync, close, rename, fsync of the directory.
// The temporary file is removed on failure. The file is created with `mode` (less the
// umask), so a new file has it; an existing file is replaced, so it has it too.
Status WriteFileDurably(const std::filesystem::path& path, std::string_view bytes,
                        FileSystem& fs = DefaultFileSystem(), int mode = 0600);

// Writes a whole new file (create or truncate) and closes it, checking every step; no
// fsync (the caller syncs a tree of such files at once, then renames it into place).
Status WriteNewFile(const std::filesystem::path& path, std::string_view bytes, FileSystem& fs = DefaultFileSystem(),
                    int mode = 0600);

// The directory for temporary files ($TMPDIR, else /tmp).
std::filesystem::path TempDirectory();

// The marker of WriteFileDurably's temporary files: "<name>.tmp-<pid>".
inline constexpr std::string_view kTempMarker = ".tmp-";

// Reads the regular file at `path` (symlinks followed), at most `max_bytes`. Errors
// name `display` (the path when empty): NotFound (missing), InvalidArgument (not a
// regular file, or a symlink loop), TooLarge (over the limit), IoError.
Result<std::string> ReadFile(const std::filesystem::path& path, size_t max_bytes, std::string_view display = {});

// An exclusive lock on a file (flock): one process per state directory, one leader per
// host. The lock goes with the open file: Unlock() lets another process take it while
// this one keeps the file (to read who holds it), Release() or the destructor close it.
// A holder writes a line into the file (its pid, for Acquire), so that a process that
// is refused can say who holds it.
class FileLock {
 public:
  // Opens the lock file, creating it with `mode`, without locking it (IoError when it
  // cannot be opened).
  static Result<std::unique_ptr<FileLock>> Open(const std::filesystem::path& path, int mode = 0600);
  // Open, then TryLock, then the pid as the holder: InvalidArgument naming the holder's
  // pid when another process holds the lock; IoError when the file cannot be opened.
  static Result<std::unique_ptr<FileLock>> Acquire(const std::filesystem::path& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  // True when this object now holds the lock, false when another does (never waits);
  // IoError for anything else.
  Result<bool> TryLock();
  void Unlock();   // keeps the file open
  void Release();  // closes it (the lock goes with it)
  // Replaces the file's content with `text`.
  Status WriteHolder(std::string_view text);
  // Up to `max_bytes` of the file's content ("" when it cannot be read).
  std::string ReadHolder(size_t max_bytes = 256) const;

 private:
  FileLock(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
  int fd_;
  std::filesystem::path path_;
};

// "1.5 MiB", "512 bytes": sizes in messages.
std::string HumanBytes(uint64_t bytes);

// Removes what is no longer needed (a leftover temporary file, a replaced or abandoned
// payload, a scratch directory), file or tree. The caller goes on whatever happens (the
// next sweep tries again), but a failure is logged with `what` and the error, never
// dropped: space that is not given back is how a disk fills up unnoticed.
void RemoveLeftover(FileSystem& fs, const std::filesystem::path& path, std::string_view what);

}  // namespace cincinnati::env
