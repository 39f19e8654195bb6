#include "tfrecord_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "file.h"
#include "tfrecord_format.h"
#include "tfrecord_frames.h"

namespace edl::tfrecord {

using recordio::ErrorCode;
using recordio::Status;

recordio::Result<std::unique_ptr<Writer>> Writer::Create(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status(ErrorCode::kIo, "cannot create: " + recordio::ErrnoText(errno));
  return std::unique_ptr<Writer>(new Writer(fd, path));
}

Writer::~Writer() { Close(); }

Status Writer::Write(const uint8_t* data, size_t n) {
  if (fd_ < 0) return Status(ErrorCode::kClosed, "the writer is closed");
  if (n > kMaxRecordSize) return Status(ErrorCode::kTooLarge, "record too large");
  if (!AppendFrame(buffer_, data, n)) return Status(ErrorCode::kTooLarge, "out of memory");
  ++records_;
  if (buffer_.size() >= (size_t{1} << 20)) return Flush();
  return Status::Ok();
}

Status Writer::Flush() {
  size_t done = 0;
  while (done < buffer_.size()) {
    ssize_t w = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status(ErrorCode::kIo, "write failed: " + recordio::ErrnoText(errno), -1,
                    static_cast<int64_t>(written_ + done));
    }
    done += static_cast<size_t>(w);
  }
  written_ += done;
  buffer_.Clear();
  return Status::Ok();
}

Status Writer::Close() {
  if (fd_ < 0) return Status::Ok();
  Status s = Flush();
  if (::close(fd_) != 0 && s.ok())
    s = Status(ErrorCode::kIo, "close failed: " + recordio::ErrnoText(errno));
  fd_ = -1;
  return s;
}

}  // namespace edl::tfrecord
