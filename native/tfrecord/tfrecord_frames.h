// Decoding and encoding of TFRecord frames held in memory: the one place both CRCs are checked.
#ifndef EDL_TFRECORD_TFRECORD_FRAMES_H_
#define EDL_TFRECORD_TFRECORD_FRAMES_H_

#include <cstddef>
#include <cstdint>

#include "byte_buffer.h"
#include "status.h"

namespace edl::tfrecord {

/// What DecodeFrames got through.
struct DecodeResult {
  /// Complete, verified records found (their bounds were written).
  uint64_t records = 0;
  /// Bytes of the input those records span: the next frame (or the fault) starts here.
  uint64_t consumed = 0;
  /// The input ends inside a frame: more bytes are needed to decode it (not an error by itself).
  bool need_more = false;
  /// A fault at input offset `consumed` (+ `base` in the status offset); records before it are
  /// good.
  recordio::Status status;
};

/// Decodes up to `max_records` whole frames from `in[0, n)`, whose first byte is at stream offset
/// `base` (only used for error offsets). For each record writes `[begin, end)` of its data, as
/// offsets into `in`, to `bounds[2 i]`, `bounds[2 i + 1]` (`bounds` holds 2 * max_records
/// entries). A header whose length CRC fails is CHECKSUM; a data CRC that fails is CHECKSUM (only
/// checked when `verify_data`); a length over kMaxRecordSize or past `max_record_size` is
/// TOO_LARGE. Stops before a frame that is cut short (need_more), never reads past `n`, and never
/// writes past `bounds[2 * max_records - 1]`. Bounds are uint32: `n` must be below 4 GiB.
DecodeResult DecodeFrames(const uint8_t* in, size_t n, uint64_t base, uint64_t max_records,
                          uint32_t* bounds, bool verify_data, uint64_t max_record_size);

/// Appends one framed record to `out`. Returns false when memory is exhausted.
bool AppendFrame(recordio::ByteBuffer& out, const uint8_t* data, size_t n);

/// How a stream starts: "none" (a valid TFRecord header, or an empty stream), "gzip" (RFC 1952
/// magic), "zlib" (RFC 1950 header), or "unknown". A valid header wins over a look-alike.
const char* DetectCompression(const uint8_t* head, size_t n);

}  // namespace edl::tfrecord

#endif  // EDL_TFRECORD_TFRECORD_FRAMES_H_
