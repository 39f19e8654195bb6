// libFuzzer target: one chunk (header + payload) through CRC check, decompression and splitting,
// plus the snappy framing and gzip decoders on their own.
//
// Input: [mode][20-byte chunk header][payload]. Mode bit 0 set: the header CRC is recomputed so
// mutations reach the decompressors instead of stopping at the checksum. Bits 1-2 pick the
// target: 0 = chunk, 1 = snappy framing, 2 = gzip.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "byte_buffer.h"
#include "chunk.h"
#include "crc32.h"
#include "format.h"
#include "gzip.h"
#include "snappy_frame.h"

using namespace edl::recordio;  // NOLINT

namespace {

// Keeps runs fast and memory small; the limits themselves are exercised too.
constexpr uint64_t kFuzzMaxOut = uint64_t{64} << 20;

void CheckBounds(const ByteBuffer& out, const ByteBuffer& bounds) {
  const auto* b = reinterpret_cast<const uint32_t*>(bounds.data());
  for (size_t i = 0; i < bounds.size() / 8; ++i) {
    if (b[2 * i] > b[2 * i + 1] || b[2 * i + 1] > out.size()) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  ++data;
  --size;
  const int target = (mode >> 1) & 3;
  if (target == 1 || target == 2) {
    ByteBuffer out;
    const Status s = target == 1 ? SnappyFrameDecode(data, size, out, kFuzzMaxOut)
                                 : GzipDecode(data, size, out, kFuzzMaxOut);
    if (s.ok() && target == 2 && size < 18) __builtin_trap();  // gzip needs a whole member
    return 0;
  }
  if (size < kHeaderSize) return 0;
  ChunkHeader h = ParseHeader(data);
  const uint8_t* payload = data + kHeaderSize;
  const size_t payload_len = size - kHeaderSize;
  if ((mode & 1) != 0 && h.compressed_size <= payload_len) {
    h.crc = Crc32(payload, h.compressed_size);
  }
  ByteBuffer out;
  ByteBuffer bounds;
  const Status s = DecodeChunk(h, payload, payload_len, out, bounds);
  if (s.ok()) {
    if (bounds.size() != size_t{h.num_records} * 8) __builtin_trap();
    CheckBounds(out, bounds);
  } else if (bounds.size() > size_t{h.num_records} * 8) {
    __builtin_trap();
  }
  return 0;
}
