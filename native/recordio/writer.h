// Writes RecordIO files: records are buffered into chunks, compressed and appended.
#ifndef EDL_RECORDIO_WRITER_H_
#define EDL_RECORDIO_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "byte_buffer.h"
#include "file_io.h"
#include "format.h"
#include "gzip.h"
#include "status.h"

namespace edl::recordio {

struct WriterOptions {
  Compressor compressor = Compressor::kNone;
  /// Flush a chunk before a record that would push the sum of record bytes (length prefixes not
  /// counted) over this limit; a larger record gets a chunk of its own (the Go writer's rule).
  uint64_t max_chunk_bytes = 32ull << 20;
  /// 0 (stored) .. 12 (best); 6 is gzip's default.
  int gzip_level = 6;
};

class Writer {
 public:
  /// Creates (truncates) `path`.
  static Result<std::unique_ptr<Writer>> Create(const std::string& path, const WriterOptions& o);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  /// Appends one record (copied). May compress and write a chunk.
  Status Write(const uint8_t* data, size_t n);
  /// Flushes the last chunk and closes the file. Idempotent.
  Status Close();

  bool closed() const { return !open_; }
  uint64_t records_written() const { return records_written_; }
  uint64_t chunks_written() const { return chunks_written_; }
  uint64_t bytes_written() const { return bytes_written_; }

 private:
  Writer(platform::FileHandle file, const WriterOptions& o);
  Status Flush();

  platform::FileHandle file_;
  bool open_ = true;
  WriterOptions options_;
  std::unique_ptr<GzipEncoder> gzip_;
  ByteBuffer records_;  // framed records of the open chunk
  ByteBuffer chunk_;    // encoded chunk being written
  uint64_t chunk_record_bytes_ = 0;
  uint32_t chunk_records_ = 0;
  uint64_t records_written_ = 0;
  uint64_t chunks_written_ = 0;
  uint64_t bytes_written_ = 0;
  Status failed_;  // sticky: after an I/O error every call returns it
};

}  // namespace edl::recordio

#endif  // EDL_RECORDIO_WRITER_H_
