#include "file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace edl::recordio {

std::string ErrnoText(int err) {
  char buf[256];
  // GNU strerror_r may return a static string instead of filling buf.
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
  return std::string(strerror_r(err, buf, sizeof buf));
#else
  if (strerror_r(err, buf, sizeof buf) != 0) return "errno " + std::to_string(err);
  return std::string(buf);
#endif
}

Result<std::shared_ptr<PosixFile>> PosixFile::Open(const std::string& path) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return Status(ErrorCode::kIo, "cannot open: " + ErrnoText(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return Status(ErrorCode::kIo, "cannot stat: " + ErrnoText(err));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return Status(ErrorCode::kIo, "cannot read: " + ErrnoText(EISDIR));
  }
#ifdef POSIX_FADV_SEQUENTIAL
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
  return std::shared_ptr<PosixFile>(new PosixFile(fd, static_cast<uint64_t>(st.st_size)));
}

PosixFile::~PosixFile() { ::close(fd_); }

Status PosixFile::ReadAt(uint64_t offset, void* dst, size_t n, size_t* got) const {
  auto* p = static_cast<uint8_t*>(dst);
  size_t done = 0;
  while (done < n) {
    // Linux caps one read at ~2 GiB; loop for larger chunks and short reads.
    const size_t want = n - done < (size_t{1} << 30) ? n - done : (size_t{1} << 30);
    const ssize_t r = ::pread(fd_, p + done, want, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      *got = done;
      return Status(ErrorCode::kIo, "read failed: " + ErrnoText(errno), -1,
                    static_cast<int64_t>(offset + done));
    }
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  *got = done;
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
