#include "env/file_system.h"

#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace cincinnati::env {
namespace {

namespace fs = std::filesystem;

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\0')) s.remove_suffix(1);
  return s;
}

class PosixWritableFile : public WritableFile {
 public:
  PosixWritableFile(int fd, fs::path path) : fd_(fd), path_(std::move(path)) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }
  Status Append(std::string_view bytes) override {
    if (fd_ < 0) return Status::IoError(fmt::format("write {}: the file is closed", path_.string()));
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      // write(2) returning 0 for a non-empty buffer: treat as the device refusing more.
      if (n <= 0) return ErrnoStatus("write", path_, n == 0 ? ENOSPC : errno);
      done += static_cast<size_t>(n);
    }
    return Status::OK();
  }
  Status Sync() override {
    if (fd_ < 0) return Status::IoError(fmt::format("fsync {}: the file is closed", path_.string()));
    if (::fsync(fd_) != 0) return ErrnoStatus("fsync", path_, errno);
    return Status::OK();
  }
  Status Close() override {
    if (fd_ < 0) return Status::OK();
    const int fd = fd_;
    fd_ = -1;
    // Linux closes the descriptor even when close(2) fails (EINTR included): no retry.
    if (::close(fd) != 0) return ErrnoStatus("close", path_, errno);
    return Status::OK();
  }

 private:
  int fd_;
  fs::path path_;
};

class PosixFileSystem : public FileSystem {
 public:
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const fs::path& path, int mode) override {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0) return ErrnoStatus("open", path, errno);
    return std::unique_ptr<WritableFile>(new PosixWritableFile(fd, path));
  }
  Status Rename(const fs::path& from, const fs::path& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return ErrnoStatus(fmt::format("rename {} to", from.string()), to, errno);
    return Status::OK();
  }
  Status SyncPath(const fs::path& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus("open", path, errno);
    int rc = ::fsync(fd);
    int error = errno;
    ::close(fd);
    if (rc != 0) return ErrnoStatus("fsync", path, error);
    return Status::OK();
  }
};

std::string_view FileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

FileType TypeOf(const fs::file_status& status) {
  if (fs::is_regular_file(status)) return FileType::kRegular;
  if (fs::is_directory(status)) return FileType::kDirectory;
  if (!fs::exists(status)) return FileType::kMissing;
  return FileType::kOther;
}

Status ListError(const fs::path& dir, const std::error_code& ec) {
  if (ec == std::errc::no_such_file_or_directory) return Status::NotFound(fmt::format("{}: no such directory", dir.string()));
  return Status::IoError(fmt::format("{}: {}", dir.string(), ec.message()));
}

std::chrono::system_clock::time_point TimeOf(const timespec& t) {
  return std::chrono::system_clock::time_point(std::chrono::duration_cast<std::chrono::system_clock::duration>(
      std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec)));
}

DirectoryEntry EntryOf(const fs::directory_entry& entry, fs::path relative) {
  std::error_code ec;
  DirectoryEntry out;
  out.path = entry.path();
  out.relative = std::move(relative);
  out.is_symlink = entry.is_symlink(ec);
  // The directory's own record (d_type) says what a plain file or directory is, with no
  // stat: listing a graph-data tree of thousands of files was a fifth of a build. Only
  // a symlink (or a file system that records no type) is stat'ed, to follow it.
  if (!out.is_symlink && entry.is_regular_file(ec)) {
    out.type = FileType::kRegular;
  } else if (!out.is_symlink && entry.is_directory(ec)) {
    out.type = FileType::kDirectory;
  } else {
    out.type = TypeOf(entry.status(ec));
  }
  return out;
}

}  // namespace

Result<std::string> FileSystem::ReadFile(const fs::path& path, size_t max_bytes, std::string_view display) {
  return env::ReadFile(path, max_bytes, display);
}

Result<std::string> FileSystem::ReadStream(const fs::path& path, size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::NotFound(fmt::format("{}: cannot open: {}", path.string(), std::strerror(errno)));
  std::string out;
  char buffer[65536];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      return Status::IoError(fmt::format("{}: read failed: {}", path.string(), std::strerror(error)));
    }
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > max_bytes) {
      ::close(fd);
      return Status::TooLarge(fmt::format("{}: over the limit of {}", path.string(), HumanBytes(max_bytes)));
    }
    out.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

FileInfo FileSystem::Stat(const fs::path& path) {
  struct stat st {};
  FileInfo info;
  if (::stat(path.c_str(), &st) != 0) return info;
  info.type = S_ISREG(st.st_mode) ? FileType::kRegular : S_ISDIR(st.st_mode) ? FileType::kDirectory : FileType::kOther;
  info.size = static_cast<uint64_t>(st.st_size);
  info.inode = static_cast<uint64_t>(st.st_ino);
  info.modified = TimeOf(st.st_mtim);
  info.changed = TimeOf(st.st_ctim);
  return info;
}

bool FileSystem::IsExecutable(const fs::path& path) { return ::access(path.c_str(), X_OK) == 0; }

Result<std::vector<DirectoryEntry>> FileSystem::ListDirectory(const fs::path& dir) {
  std::error_code ec;
  std::vector<DirectoryEntry> out;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    out.push_back(EntryOf(*it, it->path().filename()));
  }
  if (ec) return ListError(dir, ec);
  return out;
}

Result<std::vector<DirectoryEntry>> FileSystem::ListTree(const fs::path& dir) {
  std::error_code ec;
  std::vector<DirectoryEntry> out;
  std::vector<fs::path> names;  // of the entry and the directories above it, below `dir`
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    names.resize(static_cast<size_t>(it.depth()));
    names.push_back(it->path().filename());
    fs::path relative;
    for (const fs::path& name : names) relative /= name;
    out.push_back(EntryOf(*it, std::move(relative)));
  }
  if (ec) return ListError(dir, ec);
  return out;
}

Status FileSystem::CreateDirectories(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return ErrnoStatus("create", dir, ec.value());
  return Status::OK();
}

Status FileSystem::RemoveFile(const fs::path& path) {
  std::error_code ec;
  fs::remove(path, ec);
  if (ec) return ErrnoStatus("remove", path, ec.value());
  return Status::OK();
}

Status FileSystem::RemoveTree(const fs::path& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) return ErrnoStatus("remove", path, ec.value());
  return Status::OK();
}

Result<fs::path> FileSystem::CreateUniqueDirectory(const fs::path& prefix) {
  std::string pattern = prefix.string() + "XXXXXX";
  if (!::mkdtemp(pattern.data())) return ErrnoStatus("create", pattern, errno);
  return fs::path(pattern);
}

fs::path TempDirectory() {
  std::error_code ec;
  fs::path dir = fs::temp_directory_path(ec);
  return ec ? fs::path("/tmp") : dir;
}

FileSystem& DefaultFileSystem() {
  static PosixFileSystem fs;
  return fs;
}

Status ErrnoStatus(std::string_view operation, const fs::path& path, int error) {
  std::string message = fmt::format("{} {}: {}", operation, path.string(), std::strerror(error));
  if (error == ENOSPC || error == EDQUOT) return Status::NoSpace(std::move(message));
  return Status::IoError(std::move(message));
}

Status WriteNewFile(const fs::path& path, std::string_view bytes, FileSystem& fs, int mode) {
  CINCINNATI_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, fs.NewWritableFile(path, mode));
  Status s = file->Append(bytes);
  Status closed = file->Close();
  return s.ok() ? closed : s;
}

Status WriteFileDurably(const fs::path& path, std::string_view bytes, FileSystem& fs, int mode) {
  // A bare file name lives in the working directory ("beta.png" has no parent path).
  const fs::path parent = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) return ErrnoStatus("create", parent, ec.value());
  fs::path temp = path;
  temp += std::string(kTempMarker) + std::to_string(::getpid());
  auto fail = [&](Status s) {
    ::unlink(temp.c_str());
    return s;
  };
  auto file = fs.NewWritableFile(temp, mode);
  if (!file.ok()) return file.status();
  Status s = (*file)->Append(bytes);
  if (s.ok()) s = (*file)->Sync();
  Status closed = (*file)->Close();
  if (!s.ok()) return fail(s);
  if (!closed.ok()) return fail(closed);
  if (Status renamed = fs.Rename(temp, path); !renamed.ok()) return fail(renamed);
  return fs.SyncPath(parent);
}

Result<std::string> ReadFile(const fs::path& path, size_t max_bytes, std::string_view display) {
  const std::string name = display.empty() ? path.string() : std::string(display);
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int error = errno;
    if (error == ENOENT) return Status::NotFound(fmt::format("{}: no such file", name));
    if (error == ELOOP) return Status::InvalidArgument(fmt::format("{}: a symbolic link loop", name));
    return Status::IoError(fmt::format("{}: cannot open: {}", name, std::strerror(error)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int error = errno;
    ::close(fd);
    return Status::IoError(fmt::format("{}: cannot stat: {}", name, std::strerror(error)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::InvalidArgument(fmt::format("{}: {}, not a file", name, FileKind(st.st_mode)));
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    return Status::TooLarge(fmt::format("{}: the file is {}, over the limit of {}", name,
                                        HumanBytes(static_cast<uint64_t>(st.st_size)), HumanBytes(max_bytes)));
  }
  // The size may change while it is read: never more than the limit plus one byte.
  std::string out(std::min(static_cast<size_t>(st.st_size) + 1, max_bytes + 1), '\0');
  size_t done = 0;
  for (;;) {
    if (done == out.size()) {
      if (done > max_bytes) break;
      out.resize(std::min(out.size() + 65536, max_bytes + 1));
    }
    ssize_t n = ::read(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      return Status::IoError(fmt::format("{}: read failed: {}", name, std::strerror(error)));
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  if (done > max_bytes) {
    return Status::TooLarge(fmt::format("{}: the file is over the limit of {}", name, HumanBytes(max_bytes)));
  }
  out.resize(done);
  return out;
}

Result<std::unique_ptr<FileLock>> FileLock::Open(const fs::path& path, int mode) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, mode);
  if (fd < 0) return ErrnoStatus("open", path, errno);
  return std::unique_ptr<FileLock>(new FileLock(fd, path));
}

Result<std::unique_ptr<FileLock>> FileLock::Acquire(const fs::path& path) {
  CINCINNATI_ASSIGN_OR_RETURN(std::unique_ptr<FileLock> lock, Open(path));
  auto locked = lock->TryLock();
  if (!locked.ok() || !*locked) {
    const std::string holder(TrimRight(lock->ReadHolder(31)));
    if (!locked.ok()) return locked.status();
    return Status::InvalidArgument(fmt::format("{} is locked by another process{}", path.string(),
                                               holder.empty() ? "" : " (pid " + holder + ")"));
  }
  CINCINNATI_RETURN_IF_ERROR(lock->WriteHolder(std::to_string(::getpid()) + "\n"));
  return lock;
}

FileLock::~FileLock() { Release(); }

Result<bool> FileLock::TryLock() {
  if (fd_ < 0) return Status::IoError(fmt::format("lock {}: the file is closed", path_.string()));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return false;
    return ErrnoStatus("lock", path_, errno);
  }
  return true;
}

void FileLock::Unlock() {
  if (fd_ >= 0) ::flock(fd_, LOCK_UN);
}

void FileLock::Release() {
  if (fd_ >= 0) ::close(fd_);  // the lock goes with the descriptor
  fd_ = -1;
}

Status FileLock::WriteHolder(std::string_view text) {
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    return ErrnoStatus("write", path_, errno);
  }
  return Status::OK();
}

std::string FileLock::ReadHolder(size_t max_bytes) const {
  std::string buffer(max_bytes, '\0');
  const ssize_t n = fd_ >= 0 ? ::pread(fd_, buffer.data(), buffer.size(), 0) : -1;
  buffer.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return buffer;
}

std::string HumanBytes(uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} bytes", bytes);
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(units)) value /= 1024, ++unit;
  if (value == static_cast<double>(static_cast<uint64_t>(value))) return fmt::format("{} {}", static_cast<uint64_t>(value), units[unit]);
  return fmt::format("{:.1f} {}", value, units[unit]);
}

void RemoveLeftover(FileSystem& fs, const std::filesystem::path& path, std::string_view what) {
  if (Status removed = fs.RemoveTree(path); !removed.ok()) {
    spdlog::warn("cannot remove {} {}: {} (tried again later; its space stays in use meanwhile)", what, path.string(),
                 removed.message());
  }
}

}  // namespace cincinnati::env
