#include "writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "chunk.h"
#include "file.h"

namespace edl::recordio {

namespace {

// Payloads are limited by the 32-bit size field; leave room for compression overhead.
constexpr uint64_t kMaxChunkPayload = 0xFFFFFFFFull - (64ull << 20);

}  // namespace

Result<std::unique_ptr<Writer>> Writer::Create(const std::string& path, const WriterOptions& o) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return Status(ErrorCode::kIo, "cannot create: " + ErrnoText(errno));
  std::unique_ptr<Writer> w(new Writer(fd, o));
  if (o.compressor == Compressor::kGzip) {
    w->gzip_ = std::make_unique<GzipEncoder>(o.gzip_level);
  }
  return w;
}

Writer::Writer(int fd, const WriterOptions& o) : fd_(fd), options_(o) {}

Writer::~Writer() {
  if (fd_ >= 0) ::close(fd_);
}

Status Writer::Write(const uint8_t* data, size_t n) {
  if (!failed_.ok()) return failed_;
  if (fd_ < 0) return Status(ErrorCode::kClosed, "writer is closed");
  if (n > kMaxChunkPayload - kLengthPrefixSize) {
    return Status(ErrorCode::kTooLarge,
                  "record of " + std::to_string(n) + " bytes does not fit in a chunk");
  }
  if (chunk_records_ > 0 && (chunk_record_bytes_ + n > options_.max_chunk_bytes ||
                             records_.size() + kLengthPrefixSize + n > kMaxChunkPayload ||
                             chunk_records_ == 0xFFFFFFFFu)) {
    Status s = Flush();
    if (!s.ok()) return s;
  }
  if (!records_.EnsureSpare(kLengthPrefixSize + n)) {
    return Status(ErrorCode::kTooLarge, "out of memory buffering a record");
  }
  StoreLE32(records_.end(), static_cast<uint32_t>(n));
  records_.SetSize(records_.size() + kLengthPrefixSize);
  records_.Append(data, n);
  chunk_record_bytes_ += n;
  ++chunk_records_;
  ++records_written_;
  return Status::Ok();
}

Status Writer::Flush() {
  if (chunk_records_ == 0) return Status::Ok();
  chunk_.Clear();
  Status s = EncodeChunk(options_.compressor, records_.data(), records_.size(), chunk_records_,
                         gzip_.get(), chunk_);
  if (!s.ok()) return s;
  size_t done = 0;
  while (done < chunk_.size()) {
    const ssize_t w = ::write(fd_, chunk_.data() + done, chunk_.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      failed_ = Status(ErrorCode::kIo, "write failed: " + ErrnoText(errno),
                       static_cast<int64_t>(chunks_written_),
                       static_cast<int64_t>(bytes_written_ + done));
      return failed_;
    }
    done += static_cast<size_t>(w);
  }
  bytes_written_ += done;
  ++chunks_written_;
  records_.Clear();
  chunk_record_bytes_ = 0;
  chunk_records_ = 0;
  // Do not keep a huge buffer alive after a one-off giant record.
  if (records_.capacity() > (options_.max_chunk_bytes + (1u << 20)) * 2) records_ = ByteBuffer();
  if (chunk_.capacity() > (options_.max_chunk_bytes + (1u << 20)) * 2) chunk_ = ByteBuffer();
  return Status::Ok();
}

Status Writer::Close() {
  if (fd_ < 0) return Status::Ok();
  Status s = failed_.ok() ? Flush() : failed_;
  if (::close(fd_) != 0 && s.ok()) s = Status(ErrorCode::kIo, "close failed: " + ErrnoText(errno));
  fd_ = -1;
  return s;
}

}  // namespace edl::recordio
