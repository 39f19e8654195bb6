// libFuzzer target: a whole file in memory through the index scan and range reads, in both the
// stop-at-fault and skip modes, and the same bytes through the decoder of ranges held in memory
// (DecodeMemoryRange): from the headers alone, against the file's own index, and cut to a middle
// range of chunks whose buffer may end early.
//
// Input: [mode][file bytes]. Mode bit 0 set: every chunk CRC that can be found is recomputed so
// mutations reach the decoders. Bit 1: the middle range's buffer is one byte short. Bit 2: the
// memory decodes are limited to 4 KiB of output.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "crc32.h"
#include "file.h"
#include "format.h"
#include "index.h"
#include "memory_range.h"
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

void FuzzMemoryRanges(uint8_t mode, const std::vector<uint8_t>& file, const FileIndex& index) {
  const uint64_t limit = (mode & 4) != 0 ? 4096 : kMaxDecodedBytes;
  for (bool with_index : {false, true}) {
    for (bool skip : {false, true}) {
      MemoryRangeSpec spec;
      spec.skip_corrupt = skip;
      spec.max_bytes = limit;
      if (with_index) spec.expected = &index.chunks;
      ReadOutput out;
      // The buffer is what the index was scanned from: it always matches.
      if (!DecodeMemoryRange(file.data(), file.size(), spec, &out).ok()) __builtin_trap();
      Check(index, out, index.num_records);
      if (out.data.size() > limit) __builtin_trap();
    }
  }
  const size_t chunks = index.chunks.size();
  if (chunks < 2) return;
  // Chunks [chunks / 4, chunks / 2 + 1), the buffer cut to them (one byte short with mode bit 1),
  // asked for a record range inside them.
  const size_t from = chunks / 4;
  const std::vector<ChunkInfo> range(index.chunks.begin() + from,
                                     index.chunks.begin() + chunks / 2 + 1);
  const ChunkInfo& last = range.back();
  const uint64_t begin = range[0].offset;
  uint64_t end = std::min<uint64_t>(
      file.size(), last.offset + kHeaderSize + uint64_t{last.header.compressed_size});
  if ((mode & 2) != 0 && end > begin) --end;
  uint64_t records = 0;
  for (const ChunkInfo& c : range) records += c.header.num_records;
  MemoryRangeSpec spec;
  spec.base_offset = begin;
  spec.first_chunk = from;
  spec.first_record = range[0].first_record;
  spec.expected = &range;
  spec.max_bytes = limit;
  spec.skip = records / 3;
  spec.count = records - records / 3 - records / 5;
  for (bool skip : {false, true}) {
    spec.skip_corrupt = skip;
    ReadOutput out;
    if (!DecodeMemoryRange(file.data() + begin, end - begin, spec, &out).ok()) __builtin_trap();
    Check(index, out, spec.count);
    if (out.data.size() > limit) __builtin_trap();
    if (out.first_record < spec.first_record + spec.skip) __builtin_trap();
  }
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
  FuzzMemoryRanges(data[0], file, index);
  return 0;
}
