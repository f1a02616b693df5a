// A filesystem that fills up: writes through it succeed until `budget` bytes have been
// written in all, then fail with ENOSPC (the part that fits is written first, as a
// real full disk does). Everything else is the real filesystem. Thread-safe.
#pragma once

#include <errno.h>

#include <atomic>
#include <memory>

#include "env/file_system.h"

namespace cincinnati::testing {

class FullDiskFileSystem : public env::FileSystem {
 public:
  explicit FullDiskFileSystem(uint64_t budget) : budget_(budget) {}
  void SetBudget(uint64_t budget) { budget_ = budget; }  // bytes from now on
  uint64_t refused() const { return refused_; }         // writes refused so far

  Result<std::unique_ptr<env::WritableFile>> NewWritableFile(const std::filesystem::path& path, int mode) override {
    CINCINNATI_ASSIGN_OR_RETURN(auto file, env::DefaultFileSystem().NewWritableFile(path, mode));
    return std::unique_ptr<env::WritableFile>(new File(std::move(file), path, *this));
  }
  Status Rename(const std::filesystem::path& from, const std::filesystem::path& to) override {
    return env::DefaultFileSystem().Rename(from, to);
  }
  Status SyncPath(const std::filesystem::path& path) override { return env::DefaultFileSystem().SyncPath(path); }

 private:
  class File : public env::WritableFile {
   public:
    File(std::unique_ptr<env::WritableFile> real, std::filesystem::path path, FullDiskFileSystem& fs)
        : real_(std::move(real)), path_(std::move(path)), fs_(fs) {}
    Status Append(std::string_view bytes) override {
      uint64_t left = fs_.budget_.load();
      const uint64_t fits = std::min<uint64_t>(left, bytes.size());
      fs_.budget_ -= fits;
      if (fits > 0) CINCINNATI_RETURN_IF_ERROR(real_->Append(bytes.substr(0, fits)));
      if (fits < bytes.size()) {
        ++fs_.refused_;
        return env::ErrnoStatus("write", path_, ENOSPC);
      }
      return Status::OK();
    }
    Status Sync() override { return real_->Sync(); }
    Status Close() override { return real_->Close(); }

   private:
    std::unique_ptr<env::WritableFile> real_;
    std::filesystem::path path_;
    FullDiskFileSystem& fs_;
  };

  std::atomic<uint64_t> budget_;
  std::atomic<uint64_t> refused_{0};
};

}  // namespace cincinnati::testing
