// The snappy framing (stream) format: https://github.com/google/snappy/blob/main/framing_format.txt
#ifndef EDL_RECORDIO_SNAPPY_FRAME_H_
#define EDL_RECORDIO_SNAPPY_FRAME_H_

#include <cstddef>
#include <cstdint>

#include "byte_buffer.h"
#include "status.h"

namespace edl::recordio {

/// Decodes a framed snappy stream and appends the bytes to `out`. Fails with BAD_COMPRESSION
/// (offset = byte offset in `in`) on a malformed frame, CHECKSUM on a frame CRC mismatch, and
/// TOO_LARGE when more than `max_out` bytes would be appended.
Status SnappyFrameDecode(const uint8_t* in, size_t n, ByteBuffer& out, uint64_t max_out);

/// Appends a framed snappy stream (stream identifier, then frames of up to 64 KiB of input,
/// stored uncompressed when compression saves less than 12.5%). An empty input gives only the
/// stream identifier. Returns false when memory is exhausted.
bool SnappyFrameEncode(const uint8_t* in, size_t n, ByteBuffer& out);

}  // namespace edl::recordio

#endif  // EDL_RECORDIO_SNAPPY_FRAME_H_
