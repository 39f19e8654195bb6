#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "file_io.h"

namespace edl::platform {

SysError OpenForReading(const std::string& path, FileHandle* file) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return errno;
  *file = fd;
  return 0;
}

SysError FileSize(FileHandle file, uint64_t* size, bool* is_directory) {
  struct stat st;
  if (::fstat(file, &st) != 0) return errno;
  *size = static_cast<uint64_t>(st.st_size);
  *is_directory = S_ISDIR(st.st_mode);
  return 0;
}

void AdviseSequential(FileHandle file) {
#ifdef POSIX_FADV_SEQUENTIAL
  ::posix_fadvise(file, 0, 0, POSIX_FADV_SEQUENTIAL);
#else
  (void)file;
#endif
}

SysError ReadAt(FileHandle file, uint64_t offset, void* dst, size_t n, size_t* got) {
  auto* p = static_cast<uint8_t*>(dst);
  size_t done = 0;
  while (done < n) {
    // Linux caps one read at ~2 GiB; loop for larger chunks and short reads.
    const size_t want = n - done < (size_t{1} << 30) ? n - done : (size_t{1} << 30);
    const ssize_t r = ::pread(file, p + done, want, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      *got = done;
      return errno;
    }
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  *got = done;
  return 0;
}

SysError CreateForWriting(const std::string& path, unsigned permissions, FileHandle* file) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                static_cast<mode_t>(permissions));
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return errno;
  *file = fd;
  return 0;
}

SysError WriteAll(FileHandle file, const uint8_t* src, size_t n, size_t* written) {
  size_t done = 0;
  while (done < n) {
    const ssize_t w = ::write(file, src + done, n - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      *written = done;
      return errno;
    }
    done += static_cast<size_t>(w);
  }
  *written = done;
  return 0;
}

SysError CloseFile(FileHandle file) { return ::close(file) != 0 ? errno : 0; }

SysError IsDirectoryError() { return EISDIR; }

std::string ErrorText(SysError err) {
  char buf[256];
  // GNU strerror_r may return a static string instead of filling buf.
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
  return std::string(strerror_r(err, buf, sizeof buf));
#else
  if (strerror_r(err, buf, sizeof buf) != 0) return "errno " + std::to_string(err);
  return std::string(buf);
#endif
}

}  // namespace edl::platform
