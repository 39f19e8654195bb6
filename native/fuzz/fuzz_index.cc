// libFuzzer target: a whole file in memory through the index scan and range reads, in both the
// stop-at-fault and skip modes.
//
// Input: [mode][file bytes]. Mode bit 0 set: every chunk CRC that can be found is recomputed so
// mutations reach the decoders.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "crc32.h"
#include "file.h"
#include "format.h"
#include "index.h"
#include "reader.h"

using namespace edl::recordio;  // NOLINT

namespace {

void FixCrcs(std::vector<uint8_t>& f) {
  size_t off = 0;
  while (f.size() - off >= kHeaderSize) {
    const ChunkHeader h = ParseHeader(f.data() + off);
    if (h.magic != kMagic) return;
    const size_t payload = off + kHeaderSize;
    if (h.compressed_size > f.size() - payload) return;
    StoreLE32(f.data() + off + 4, Crc32(f.data() + payload, h.compressed_size));
    off = payload + h.compressed_size;
  }
}

void Check(const FileIndex& index, const ReadOutput& out, uint64_t count) {
  const size_t n = out.bounds.size() / 8;
  if (n > count) __builtin_trap();
  const auto* b = reinterpret_cast<const uint32_t*>(out.bounds.data());
  for (size_t i = 0; i < n; ++i) {
    if (b[2 * i] > b[2 * i + 1] || b[2 * i + 1] > out.data.size()) __builtin_trap();
  }
  // Without a fault, every requested record is delivered.
  if (!out.has_error && out.skipped.empty() && n != count) __builtin_trap();
  (void)index;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::vector<uint8_t> file(data + 1, data + size);
  if ((data[0] & 1) != 0) FixCrcs(file);
  MemoryFile f(file.data(), file.size());
  FileIndex index;
  if (!ScanIndex(f, &index).ok()) __builtin_trap();  // memory never fails to read
  if (index.file_size != file.size()) __builtin_trap();
  const uint64_t n = index.num_records;
  // Lying headers can claim billions of records; reads must stay bounded regardless.
  const uint64_t ranges[][2] = {
      {0, n}, {n / 3, n - n / 3}, {n / 2, n > 0 ? uint64_t{1} : uint64_t{0}}, {n, 0}};
  for (const auto& r : ranges) {
    for (bool skip : {false, true}) {
      ReadOutput out;
      if (!ReadRecords(f, index, r[0], r[1], skip, &out).ok()) __builtin_trap();
      Check(index, out, r[1]);
    }
  }
  ReadOutput out;
  if (ReadRecords(f, index, n, 1, false, &out).ok()) __builtin_trap();  // out of range
  return 0;
}
