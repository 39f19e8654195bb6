// libFuzzer target: one chunk (header + payload) through CRC check, decompression and splitting
// into records. The snappy framing and gzip decoders have targets of their own (fuzz_snappy,
// fuzz_gzip), so that each is fuzzed with its own dictionary and corpus.
//
// Input: [mode][20-byte chunk header][payload]. Mode bit 0 set: the header CRC is recomputed so
// mutations reach the decompressors instead of stopping at the checksum.
#include <cstddef>
#include <cstdint>

#include "byte_buffer.h"
#include "chunk.h"
#include "crc32.h"
#include "format.h"

using namespace edl::recordio;  // NOLINT

namespace {

void CheckBounds(const ByteBuffer& out, const ByteBuffer& bounds) {
  const auto* b = reinterpret_cast<const uint32_t*>(bounds.data());
  for (size_t i = 0; i < bounds.size() / 8; ++i) {
    if (b[2 * i] > b[2 * i + 1] || b[2 * i + 1] > out.size()) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 + kHeaderSize) return 0;
  const uint8_t mode = data[0];
  ++data;
  --size;
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
