// Positioned reads behind a small interface, so the index scan and reader can be fuzzed in memory.
#ifndef EDL_RECORDIO_FILE_H_
#define EDL_RECORDIO_FILE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "file_io.h"
#include "status.h"

namespace edl::recordio {

class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  /// Size when opened.
  virtual uint64_t Size() const = 0;
  /// Reads up to `n` bytes at `offset` into `dst`; `*got` < n only at end of file. Thread-safe.
  virtual Status ReadAt(uint64_t offset, void* dst, size_t n, size_t* got) const = 0;
  /// The bytes [offset, offset + n) in place when the file already holds them in memory, so that
  /// decoders read them there instead of copying them into a scratch buffer first; null when they
  /// are not in memory (a file on disk) or not all inside the file.
  virtual const uint8_t* View(uint64_t offset, size_t n) const {
    (void)offset;
    (void)n;
    return nullptr;
  }
};

/// A read-only file on disk (native/platform: a descriptor, a Win32 handle on Windows); closed when
/// the last reference goes.
class LocalFile final : public RandomAccessFile {
 public:
  /// Opens `path` (UTF-8).
  static Result<std::shared_ptr<LocalFile>> Open(const std::string& path);
  ~LocalFile() override;
  LocalFile(const LocalFile&) = delete;
  LocalFile& operator=(const LocalFile&) = delete;

  uint64_t Size() const override { return size_; }
  Status ReadAt(uint64_t offset, void* dst, size_t n, size_t* got) const override;

 private:
  LocalFile(platform::FileHandle file, uint64_t size) : file_(file), size_(size) {}
  platform::FileHandle file_;
  uint64_t size_;
};

/// A file held in memory: a byte range handed over by JavaScript (object storage fetches), tests,
/// fuzzers. Does not own the bytes.
class MemoryFile final : public RandomAccessFile {
 public:
  MemoryFile(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint64_t Size() const override { return size_; }
  Status ReadAt(uint64_t offset, void* dst, size_t n, size_t* got) const override;
  const uint8_t* View(uint64_t offset, size_t n) const override {
    return offset <= size_ && n <= size_ - offset ? data_ + offset : nullptr;
  }

 private:
  const uint8_t* data_;
  size_t size_;
};

}  // namespace edl::recordio

#endif  // EDL_RECORDIO_FILE_H_
