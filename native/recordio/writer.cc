#include "writer.h"

#include "chunk.h"
#include "file_io.h"

namespace edl::recordio {

namespace {

// Payloads are limited by the 32-bit size field; leave room for compression overhead.
constexpr uint64_t kMaxChunkPayload = 0xFFFFFFFFull - (64ull << 20);

}  // namespace

Result<std::unique_ptr<Writer>> Writer::Create(const std::string& path, const WriterOptions& o) {
  platform::FileHandle file;
  if (platform::SysError err = platform::CreateForWriting(path, 0666, &file))
    return Status(ErrorCode::kIo, "cannot create: " + platform::ErrorText(err));
  std::unique_ptr<Writer> w(new Writer(file, o));
  if (o.compressor == Compressor::kGzip) {
    w->gzip_ = std::make_unique<GzipEncoder>(o.gzip_level);
  }
  return w;
}

Writer::Writer(platform::FileHandle file, const WriterOptions& o) : file_(file), options_(o) {}

Writer::~Writer() {
  if (open_) platform::CloseFile(file_);
}

Status Writer::Write(const uint8_t* data, size_t n) {
  if (!failed_.ok()) return failed_;
  if (!open_) return Status(ErrorCode::kClosed, "writer is closed");
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
  if (platform::SysError err = platform::WriteAll(file_, chunk_.data(), chunk_.size(), &done)) {
    failed_ =
        Status(ErrorCode::kIo, "write failed: " + platform::ErrorText(err),
               static_cast<int64_t>(chunks_written_), static_cast<int64_t>(bytes_written_ + done));
    return failed_;
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
  if (!open_) return Status::Ok();
  Status s = failed_.ok() ? Flush() : failed_;
  platform::SysError err = platform::CloseFile(file_);
  if (err != 0 && s.ok()) s = Status(ErrorCode::kIo, "close failed: " + platform::ErrorText(err));
  open_ = false;
  return s;
}

}  // namespace edl::recordio
