// libFuzzer target: TFRecord frames through the decoder, the same bytes as a file through the
// header scan and range reads, and as a range held in memory (DecodeRecords).
//
// Input: [mode][bytes]. Mode bit 0 set: every header's length CRC and every data CRC that can be
// fixed up is recomputed first, so mutations reach the length and framing logic instead of
// stopping at the first checksum.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "file.h"
#include "tfrecord_format.h"
#include "tfrecord_frames.h"
#include "tfrecord_index.h"

using namespace edl::tfrecord;  // NOLINT

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  std::vector<uint8_t> in(data + 1, data + size);
  if (mode & 1) {
    size_t pos = 0;
    while (in.size() - pos >= kHeaderSize) {
      StoreU32(in.data() + pos + 8, MaskedCrc32c(in.data() + pos, 8));
      const uint64_t len = LoadU64(in.data() + pos);
      if (len > in.size() - pos - kHeaderSize || in.size() - pos - kHeaderSize - len < kFooterSize)
        break;
      StoreU32(in.data() + pos + kHeaderSize + len,
               MaskedCrc32c(in.data() + pos + kHeaderSize, len));
      pos += kFrameOverhead + len;
    }
  }
  // Small max_record_size sometimes, so the limit itself is exercised.
  const uint64_t max_size = (mode & 2) ? 64 : kMaxRecordSize;
  std::vector<uint32_t> bounds(2 * (in.size() / kFrameOverhead + 1));
  DecodeResult r = DecodeFrames(in.data(), in.size(), 0, bounds.size() / 2, bounds.data(),
                                (mode & 4) == 0, max_size);
  if (r.consumed > in.size()) __builtin_trap();
  for (uint64_t i = 0; i < r.records; ++i) {
    if (bounds[2 * i] > bounds[2 * i + 1] || bounds[2 * i + 1] > r.consumed) __builtin_trap();
  }
  edl::recordio::MemoryFile file(in.data(), in.size());
  std::vector<uint64_t> offsets;
  ScanIndex(file, &offsets, (mode & 8) ? 16 : 4096);
  if (offsets.empty() || offsets.back() > in.size()) __builtin_trap();
  const uint64_t n = offsets.size() - 1;
  if (n > 0) {
    edl::recordio::ByteBuffer out;
    std::vector<uint32_t> b;
    ReadRange(file, offsets, n / 2, n - n / 2, out, &b);
    for (size_t i = 0; i < b.size() / 2; ++i) {
      if (b[2 * i] > b[2 * i + 1] || b[2 * i + 1] > out.size()) __builtin_trap();
    }
  }
  // As a range in memory: every frame, then a count from the last byte (a lying count must not
  // size the output). Faults are TRUNCATED at or after the last whole record.
  for (const uint64_t count : {kAllRecords, uint64_t{data[size - 1]}}) {
    std::vector<uint32_t> b;
    edl::recordio::Status s = DecodeRecords(in.data(), in.size(), 7, count, max_size, &b);
    if (b.size() / 2 > in.size() / kFrameOverhead ||
        (s.ok() && count != kAllRecords && b.size() / 2 != count)) {
      __builtin_trap();
    }
    for (size_t i = 0; i < b.size() / 2; ++i) {
      if (b[2 * i] > b[2 * i + 1] || b[2 * i + 1] > in.size()) __builtin_trap();
    }
  }
  return 0;
}
