// TFRecord framing (tensorflow/core/lib/io/record_writer.h): each record is
//   uint64 LE length | uint32 LE masked CRC-32C of the 8 length bytes | data | masked CRC-32C of
//   data
// The mask is the one of the snappy framing format (and of LevelDB): rotate right 15, add a
// constant.
#ifndef EDL_TFRECORD_TFRECORD_FORMAT_H_
#define EDL_TFRECORD_TFRECORD_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "crc32.h"

namespace edl::tfrecord {

constexpr size_t kHeaderSize = 12;  // length + length CRC
constexpr size_t kFooterSize = 4;   // data CRC
constexpr size_t kFrameOverhead = kHeaderSize + kFooterSize;
// One record's data must fit a batch (bounds are uint32) and stay far from overflow in offsets.
constexpr uint64_t kMaxRecordSize = (uint64_t{1} << 32) - 1 - kFrameOverhead;

inline uint32_t MaskedCrc32c(const uint8_t* data, size_t n) {
  return recordio::MaskCrc(recordio::Crc32c(data, n));
}

inline uint64_t LoadU64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

inline uint32_t LoadU32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

inline void StoreU64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

inline void StoreU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

/// Whether the 12 bytes at `p` are a well-formed header (its length CRC matches).
inline bool HeaderValid(const uint8_t* p) { return MaskedCrc32c(p, 8) == LoadU32(p + 8); }

}  // namespace edl::tfrecord

#endif  // EDL_TFRECORD_TFRECORD_FORMAT_H_
