// Gzip (RFC 1952) through libdeflate: whole-buffer decode of one or more members, and encode.
#ifndef EDL_RECORDIO_GZIP_H_
#define EDL_RECORDIO_GZIP_H_

#include <cstddef>
#include <cstdint>

#include "byte_buffer.h"
#include "status.h"

struct libdeflate_compressor;

namespace edl::recordio {

/// Decodes every gzip member in `in` and appends the bytes to `out`. A cut-short or corrupt
/// member (including a bad CRC/ISIZE trailer) is BAD_COMPRESSION with the offset of the member in
/// `in`; more than `max_out` bytes is TOO_LARGE. Never returns a short result as success.
Status GzipDecode(const uint8_t* in, size_t n, ByteBuffer& out, uint64_t max_out);

/// Owns a libdeflate compressor for one level (0 = stored .. 12 = best; 6 is gzip's default).
class GzipEncoder {
 public:
  explicit GzipEncoder(int level);
  ~GzipEncoder();
  GzipEncoder(const GzipEncoder&) = delete;
  GzipEncoder& operator=(const GzipEncoder&) = delete;

  /// Appends one gzip member holding `in` to `out`. Returns false when memory is exhausted.
  bool Encode(const uint8_t* in, size_t n, ByteBuffer& out);

 private:
  ::libdeflate_compressor* compressor_;
};

}  // namespace edl::recordio

#endif  // EDL_RECORDIO_GZIP_H_
