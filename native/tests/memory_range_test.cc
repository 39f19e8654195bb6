// Decoding from memory (DecodeMemoryRange): every golden file held in memory reads exactly as the
// file does, faults included; ranges cut at chunk boundaries; buffers that do not hold what the
// caller's index says fail cleanly.
#include "memory_range.h"

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "file.h"
#include "index.h"
#include "reader.h"
#include "test_util.h"

using namespace edl::recordio;  // NOLINT

namespace {

const char* const kGolden[] = {
    "seq-none-64k.rio",     "seq-snappy-64k.rio",     "seq-gzip-64k.rio",
    "seq-none-default.rio", "seq-snappy-default.rio", "seq-gzip-default.rio",
    "empty-file.rio",       "empty-records-gzip.rio", "hello-snappy.rio",
    "bad-crc-none-64k.rio", "truncated-none-64k.rio", "truncated-gzip-64k.rio",
};

std::vector<uint8_t> Slurp(const std::string& name) {
  std::ifstream in(edl::test::GoldenPath(name), std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// The records of a read as strings, so two reads compare whatever their buffers' layout.
std::vector<std::string> Records(const ReadOutput& out) {
  std::vector<std::string> r;
  const auto* b = reinterpret_cast<const uint32_t*>(out.bounds.data());
  for (size_t i = 0; i < out.bounds.size() / 8; ++i) {
    r.emplace_back(reinterpret_cast<const char*>(out.data.data()) + b[2 * i],
                   b[2 * i + 1] - b[2 * i]);
  }
  return r;
}

void CheckSameFault(const ChunkFault& a, const ChunkFault& b) {
  CHECK_EQ(a.status.code(), b.status.code());
  CHECK_EQ(a.status.message(), b.status.message());
  CHECK_EQ(a.status.chunk(), b.status.chunk());
  CHECK_EQ(a.status.offset(), b.status.offset());
  CHECK_EQ(a.records, b.records);
}

void CheckSameRead(const ReadOutput& file, const ReadOutput& memory) {
  CHECK(Records(file) == Records(memory));
  CHECK_EQ(file.has_error, memory.has_error);
  if (file.has_error && memory.has_error) CheckSameFault(file.error, memory.error);
  CHECK_EQ(file.skipped.size(), memory.skipped.size());
  for (size_t i = 0; i < file.skipped.size() && i < memory.skipped.size(); ++i) {
    CheckSameFault(file.skipped[i], memory.skipped[i]);
  }
}

FileIndex IndexOf(const std::vector<uint8_t>& bytes) {
  FileIndex index;
  CHECK_OK(ScanIndex(MemoryFile(bytes.data(), bytes.size()), &index));
  return index;
}

// The chunks [from, to) of `index` and the bytes they span.
struct Range {
  std::vector<ChunkInfo> chunks;
  MemoryRangeSpec spec;
  const uint8_t* data = nullptr;
  size_t size = 0;
};

Range Cut(const std::vector<uint8_t>& bytes, const FileIndex& index, size_t from, size_t to) {
  Range r;
  r.chunks.assign(index.chunks.begin() + from, index.chunks.begin() + to);
  const ChunkInfo& last = r.chunks.back();
  r.spec.base_offset = r.chunks[0].offset;
  r.spec.first_chunk = from;
  r.spec.first_record = r.chunks[0].first_record;
  r.spec.expected = &r.chunks;
  r.data = bytes.data() + r.chunks[0].offset;
  r.size = last.offset + kHeaderSize + last.header.compressed_size - r.chunks[0].offset;
  return r;
}

}  // namespace

TEST(EveryGoldenFileFromMemoryReadsAsTheFile) {
  for (const char* name : kGolden) {
    const std::vector<uint8_t> bytes = Slurp(name);
    auto file = LocalFile::Open(edl::test::GoldenPath(name));
    CHECK_OK(file.status());
    if (!file.ok()) continue;
    FileIndex index;
    CHECK_OK(ScanIndex(*file.value(), &index));
    for (bool with_index : {false, true}) {
      for (bool skip : {false, true}) {
        ReadOutput from_file;
        CHECK_OK(ReadRecords(*file.value(), index, 0, index.num_records, skip, &from_file));
        MemoryRangeSpec spec;
        spec.skip_corrupt = skip;
        if (with_index) spec.expected = &index.chunks;
        ReadOutput from_memory;
        CHECK_OK(DecodeMemoryRange(bytes.data(), bytes.size(), spec, &from_memory));
        CheckSameRead(from_file, from_memory);
        // Past the chunks skipped at the start (bad-crc's chunk 0 in skip mode).
        const bool first_skipped = !from_file.skipped.empty() &&
                                   from_file.skipped[0].status.chunk() == 0 &&
                                   from_file.skipped[0].records > 0;
        CHECK_EQ(from_memory.first_record,
                 first_skipped ? uint64_t{index.chunks[0].header.num_records} : uint64_t{0});
      }
    }
  }
}

TEST(RangesCutAtChunkBoundaries) {
  for (const char* name : {"seq-none-64k.rio", "seq-snappy-64k.rio", "seq-gzip-64k.rio"}) {
    const std::vector<uint8_t> bytes = Slurp(name);
    const FileIndex index = IndexOf(bytes);
    const MemoryFile file(bytes.data(), bytes.size());
    struct Case {
      size_t from, to;
      uint64_t skip, count;  // count 0: to the end of the range (kAllRecords)
    };
    for (const Case& c : {Case{0, 1, 0, 611}, Case{3, 6, 5, 100}, Case{6, 15, 0, 0}}) {
      const auto [from, to, skip, count] = c;
      Range r = Cut(bytes, index, from, to);
      r.spec.skip = skip;
      r.spec.count = count == 0 ? MemoryRangeSpec::kAllRecords : count;
      const uint64_t want_count = count == 0 ? index.num_records - r.spec.first_record : count;
      for (bool with_index : {false, true}) {
        r.spec.expected = with_index ? &r.chunks : nullptr;
        ReadOutput want;
        CHECK_OK(ReadRecords(file, index, r.spec.first_record + skip, want_count, false, &want));
        ReadOutput got;
        CHECK_OK(DecodeMemoryRange(r.data, r.size, r.spec, &got));
        CHECK(Records(want) == Records(got));
        CHECK_EQ(got.first_record, r.spec.first_record + skip);
      }
    }
  }
}

TEST(SkippedChunksAtTheStartMoveTheFirstRecord) {
  const std::vector<uint8_t> bytes = Slurp("bad-crc-none-64k.rio");
  Range r = Cut(bytes, IndexOf(bytes), 0, 3);
  r.spec.skip = 600;
  r.spec.skip_corrupt = true;
  ReadOutput out;
  CHECK_OK(DecodeMemoryRange(r.data, r.size, r.spec, &out));
  CHECK_EQ(out.first_record, uint64_t{611});
  CHECK_EQ(out.skipped.size(), size_t{1});
  CHECK_EQ(out.skipped[0].records, uint64_t{11});
  CHECK_EQ(out.delivered, uint64_t{576 + 536});
}

TEST(ABufferShorterThanItsIndexFailsCleanly) {
  const std::vector<uint8_t> bytes = Slurp("seq-snappy-64k.rio");
  const FileIndex index = IndexOf(bytes);
  const Range r = Cut(bytes, index, 2, 5);
  const ChunkInfo& missing = r.chunks[2];
  const uint64_t before = missing.first_record - r.chunks[0].first_record;
  // Ends at a chunk boundary: a TRUNCATED tail for the first missing chunk, after the records
  // before it, in both modes.
  for (bool skip : {false, true}) {
    MemoryRangeSpec spec = r.spec;
    spec.skip_corrupt = skip;
    ReadOutput out;
    CHECK_OK(DecodeMemoryRange(r.data, missing.offset - r.spec.base_offset, spec, &out));
    CHECK_EQ(out.delivered, before);
    const ChunkFault& f = skip ? out.skipped.at(0) : out.error;
    CHECK_EQ(f.status.code(), ErrorCode::kTruncated);
    CHECK_EQ(f.status.chunk(), int64_t{4});
    CHECK_EQ(f.status.offset(), static_cast<int64_t>(missing.offset));
    CHECK_EQ(f.records, uint64_t{missing.header.num_records});
  }
  // Ends inside the last chunk: that chunk is TRUNCATED, as in a file cut there.
  ReadOutput cut;
  CHECK_OK(DecodeMemoryRange(r.data, r.size - 1, r.spec, &cut));
  CHECK(cut.has_error);
  CHECK_EQ(cut.error.status.code(), ErrorCode::kTruncated);
  CHECK_EQ(cut.error.status.chunk(), int64_t{4});
  // Nothing at all.
  ReadOutput empty;
  CHECK_OK(DecodeMemoryRange(r.data, 0, r.spec, &empty));
  CHECK_EQ(empty.delivered, uint64_t{0});
  CHECK_EQ(empty.error.status.chunk(), int64_t{2});
}

TEST(AnIndexThatDoesNotDescribeTheBytesIsRefused) {
  const std::vector<uint8_t> bytes = Slurp("seq-gzip-64k.rio");
  Range r = Cut(bytes, IndexOf(bytes), 2, 5);
  r.chunks[1].header.num_records += 1;
  ReadOutput out;
  const Status s = DecodeMemoryRange(r.data, r.size, r.spec, &out);
  CHECK_EQ(s.code(), ErrorCode::kBadMagic);
  CHECK_EQ(s.chunk(), int64_t{3});
  CHECK_EQ(s.offset(), static_cast<int64_t>(r.chunks[1].offset));
  // A buffer that does not start at the first chunk's header.
  Range shifted = Cut(bytes, IndexOf(bytes), 2, 5);
  // A buffer that does not start at the first chunk's header: no chunk header there, reported
  // as a file whose first header is bad.
  ReadOutput out2;
  CHECK_OK(DecodeMemoryRange(shifted.data + 1, shifted.size - 1, shifted.spec, &out2));
  CHECK_EQ(out2.delivered, uint64_t{0});
  CHECK_EQ(out2.error.status.code(), ErrorCode::kBadMagic);
  CHECK_EQ(out2.error.status.chunk(), int64_t{2});
}

TEST(OutputAndRangeAreBounded) {
  const std::vector<uint8_t> bytes = Slurp("seq-gzip-64k.rio");
  Range r = Cut(bytes, IndexOf(bytes), 0, 3);
  r.spec.max_bytes = 100000;
  ReadOutput out;
  CHECK_OK(DecodeMemoryRange(r.data, r.size, r.spec, &out));
  CHECK(out.has_error);
  CHECK_EQ(out.error.status.code(), ErrorCode::kTooLarge);
  CHECK(out.data.size() <= 100000);
  CHECK_EQ(out.delivered, uint64_t{611});  // the first chunk fits, the second does not
  r.spec.max_bytes = kMaxDecodedBytes;
  r.spec.skip = 1;
  r.spec.count = 611 + 576 + 536;
  ReadOutput past;
  CHECK_EQ(DecodeMemoryRange(r.data, r.size, r.spec, &past).code(), ErrorCode::kOutOfRange);
}
