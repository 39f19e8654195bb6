// Writes an uncompressed TFRecord file. (Compressed files are written by @edl/recordio's
// TFRecordWriter, through Node's streaming zlib: the addon links no zlib.)
#ifndef EDL_TFRECORD_TFRECORD_WRITER_H_
#define EDL_TFRECORD_TFRECORD_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "byte_buffer.h"
#include "file_io.h"
#include "status.h"

namespace edl::tfrecord {

class Writer {
 public:
  /// Creates (truncates) `path`.
  static recordio::Result<std::unique_ptr<Writer>> Create(const std::string& path);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  /// Frames and buffers one record; flushes when the buffer passes 1 MiB.
  recordio::Status Write(const uint8_t* data, size_t n);
  /// Writes what is buffered and closes the file. Idempotent.
  recordio::Status Close();
  uint64_t records() const { return records_; }

 private:
  Writer(platform::FileHandle file, std::string path) : file_(file), path_(std::move(path)) {}
  recordio::Status Flush();
  platform::FileHandle file_;
  bool open_ = true;
  std::string path_;
  recordio::ByteBuffer buffer_;
  uint64_t records_ = 0;
  uint64_t written_ = 0;
};

}  // namespace edl::tfrecord

#endif  // EDL_TFRECORD_TFRECORD_WRITER_H_
