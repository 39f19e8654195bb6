#include "tfrecord_writer.h"

#include "file_io.h"
#include "tfrecord_format.h"
#include "tfrecord_frames.h"

namespace edl::tfrecord {

using recordio::ErrorCode;
using recordio::Status;

recordio::Result<std::unique_ptr<Writer>> Writer::Create(const std::string& path) {
  platform::FileHandle file;
  if (platform::SysError err = platform::CreateForWriting(path, 0644, &file))
    return Status(ErrorCode::kIo, "cannot create: " + platform::ErrorText(err));
  return std::unique_ptr<Writer>(new Writer(file, path));
}

Writer::~Writer() { Close(); }

Status Writer::Write(const uint8_t* data, size_t n) {
  if (!open_) return Status(ErrorCode::kClosed, "the writer is closed");
  if (n > kMaxRecordSize) return Status(ErrorCode::kTooLarge, "record too large");
  if (!AppendFrame(buffer_, data, n)) return Status(ErrorCode::kTooLarge, "out of memory");
  ++records_;
  if (buffer_.size() >= (size_t{1} << 20)) return Flush();
  return Status::Ok();
}

Status Writer::Flush() {
  size_t done = 0;
  if (platform::SysError err = platform::WriteAll(file_, buffer_.data(), buffer_.size(), &done))
    return Status(ErrorCode::kIo, "write failed: " + platform::ErrorText(err), -1,
                  static_cast<int64_t>(written_ + done));
  written_ += done;
  buffer_.Clear();
  return Status::Ok();
}

Status Writer::Close() {
  if (!open_) return Status::Ok();
  Status s = Flush();
  platform::SysError err = platform::CloseFile(file_);
  if (err != 0 && s.ok()) s = Status(ErrorCode::kIo, "close failed: " + platform::ErrorText(err));
  open_ = false;
  return s;
}

}  // namespace edl::tfrecord
