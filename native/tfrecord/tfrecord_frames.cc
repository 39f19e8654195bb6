#include "tfrecord_frames.h"

#include <string>

#include "tfrecord_format.h"

namespace edl::tfrecord {

using recordio::ErrorCode;
using recordio::Status;

DecodeResult DecodeFrames(const uint8_t* in, size_t n, uint64_t base, uint64_t max_records,
                          uint32_t* bounds, bool verify_data, uint64_t max_record_size) {
  DecodeResult r;
  size_t pos = 0;
  while (r.records < max_records) {
    if (n - pos < kHeaderSize) {
      r.need_more = pos < n;
      break;
    }
    const uint8_t* h = in + pos;
    if (!HeaderValid(h)) {
      r.status = Status(ErrorCode::kChecksum,
                        "record header length CRC mismatch (not a TFRecord stream, or corrupt)", -1,
                        static_cast<int64_t>(base + pos));
      break;
    }
    const uint64_t len = LoadU64(h);
    if (len > kMaxRecordSize || len > max_record_size) {
      r.status = Status(ErrorCode::kTooLarge,
                        "record of " + std::to_string(len) + " bytes exceeds the limit of " +
                            std::to_string(len > kMaxRecordSize ? kMaxRecordSize : max_record_size),
                        -1, static_cast<int64_t>(base + pos));
      break;
    }
    const uint64_t frame = kFrameOverhead + len;
    if (n - pos < frame) {
      r.need_more = true;
      break;
    }
    const uint8_t* d = h + kHeaderSize;
    if (verify_data && MaskedCrc32c(d, static_cast<size_t>(len)) != LoadU32(d + len)) {
      r.status = Status(ErrorCode::kChecksum, "record data CRC mismatch", -1,
                        static_cast<int64_t>(base + pos));
      break;
    }
    bounds[2 * r.records] = static_cast<uint32_t>(pos + kHeaderSize);
    bounds[2 * r.records + 1] = static_cast<uint32_t>(pos + kHeaderSize + len);
    ++r.records;
    pos += static_cast<size_t>(frame);
  }
  r.consumed = pos;
  return r;
}

bool AppendFrame(recordio::ByteBuffer& out, const uint8_t* data, size_t n) {
  if (!out.EnsureSpare(kFrameOverhead + n)) return false;
  uint8_t* p = out.end();
  StoreU64(p, n);
  StoreU32(p + 8, MaskedCrc32c(p, 8));
  if (n > 0) std::memcpy(p + kHeaderSize, data, n);
  StoreU32(p + kHeaderSize + n, MaskedCrc32c(p + kHeaderSize, n));
  out.SetSize(out.size() + kFrameOverhead + n);
  return true;
}

const char* DetectCompression(const uint8_t* head, size_t n) {
  if (n == 0) return "none";
  if (n >= kHeaderSize && HeaderValid(head)) return "none";
  if (n >= 2 && head[0] == 0x1f && head[1] == 0x8b) return "gzip";
  // RFC 1950: CM = 8 (deflate), CINFO <= 7, and the 16-bit header is a multiple of 31.
  if (n >= 2 && (head[0] & 0x0f) == 8 && (head[0] >> 4) <= 7 &&
      ((static_cast<unsigned>(head[0]) << 8) | head[1]) % 31 == 0) {
    return "zlib";
  }
  return "unknown";
}

}  // namespace edl::tfrecord
