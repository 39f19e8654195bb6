#include "file.h"

#include <cstring>

namespace edl::recordio {

using platform::ErrorText;
using platform::SysError;

Result<std::shared_ptr<LocalFile>> LocalFile::Open(const std::string& path) {
  platform::FileHandle file;
  if (SysError err = platform::OpenForReading(path, &file))
    return Status(ErrorCode::kIo, "cannot open: " + ErrorText(err));
  uint64_t size = 0;
  bool is_directory = false;
  if (SysError err = platform::FileSize(file, &size, &is_directory)) {
    platform::CloseFile(file);
    return Status(ErrorCode::kIo, "cannot stat: " + ErrorText(err));
  }
  if (is_directory) {
    platform::CloseFile(file);
    return Status(ErrorCode::kIo, "cannot read: " + ErrorText(platform::IsDirectoryError()));
  }
  platform::AdviseSequential(file);
  return std::shared_ptr<LocalFile>(new LocalFile(file, size));
}

LocalFile::~LocalFile() { platform::CloseFile(file_); }

Status LocalFile::ReadAt(uint64_t offset, void* dst, size_t n, size_t* got) const {
  if (SysError err = platform::ReadAt(file_, offset, dst, n, got))
    return Status(ErrorCode::kIo, "read failed: " + ErrorText(err), -1,
                  static_cast<int64_t>(offset + *got));
  return Status::Ok();
}

Status MemoryFile::ReadAt(uint64_t offset, void* dst, size_t n, size_t* got) const {
  if (offset >= size_) {
    *got = 0;
    return Status::Ok();
  }
  const size_t avail = size_ - static_cast<size_t>(offset);
  const size_t take = n < avail ? n : avail;
  if (take > 0) std::memcpy(dst, data_ + offset, take);
  *got = take;
  return Status::Ok();
}

}  // namespace edl::recordio
