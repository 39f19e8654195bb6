// Every file of packages/recordio/test/golden reads back as MANIFEST.txt says; the damaged ones
// fail the way golden/README.md describes.
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "file.h"
#include "index.h"
#include "reader.h"
#include "sha256.h"
#include "test_util.h"

using namespace edl::recordio;  // NOLINT

namespace {

struct Expected {
  uint64_t records = 0;
  std::string stream_sha;
};

std::map<std::string, Expected> Manifest() {
  std::map<std::string, Expected> m;
  std::ifstream in(edl::test::GoldenPath("MANIFEST.txt"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::stringstream ss(line);
    std::string field;
    while (std::getline(ss, field, '\t')) f.push_back(field);
    if (f.size() < 7) continue;
    m[f[0]] = {std::stoull(f[4]), f[6]};
  }
  return m;
}

struct Opened {
  std::shared_ptr<LocalFile> file;
  FileIndex index;
};

Opened Open(const std::string& name) {
  Opened o;
  auto f = LocalFile::Open(edl::test::GoldenPath(name));
  CHECK_OK(f.status());
  if (!f.ok()) return o;
  o.file = f.value();
  CHECK_OK(ScanIndex(*o.file, &o.index));
  return o;
}

// sha256 of concat(u32le(len) || record) over the delivered records.
std::string StreamSha(const ReadOutput& out) {
  edl::test::Sha256 h;
  const auto* b = reinterpret_cast<const uint32_t*>(out.bounds.data());
  for (size_t i = 0; i < out.bounds.size() / 8; ++i) {
    const uint32_t len = b[2 * i + 1] - b[2 * i];
    uint8_t le[4] = {static_cast<uint8_t>(len), static_cast<uint8_t>(len >> 8),
                     static_cast<uint8_t>(len >> 16), static_cast<uint8_t>(len >> 24)};
    h.Update(le, 4);
    h.Update(out.data.data() + b[2 * i], len);
  }
  return h.HexDigest();
}

size_t Delivered(const ReadOutput& out) { return out.bounds.size() / 8; }

}  // namespace

TEST(ManifestIsThere) { CHECK_EQ(Manifest().size(), 16u); }

TEST(EveryIntactFileMatchesTheManifest) {
  for (const auto& [name, want] : Manifest()) {
    if (name.rfind("bad-", 0) == 0 || name.rfind("truncated-", 0) == 0) continue;
    Opened o = Open(name);
    if (!o.file) continue;
    CHECK_EQ(o.index.num_records, want.records);
    CHECK_OK(o.index.tail);
    for (bool skip : {false, true}) {
      ReadOutput out;
      CHECK_OK(ReadRecords(*o.file, o.index, 0, o.index.num_records, skip, &out));
      CHECK(!out.has_error);
      CHECK(out.skipped.empty());
      CHECK_EQ(Delivered(out), want.records);
      if (StreamSha(out) != want.stream_sha) {
        std::fprintf(stderr, "stream sha256 differs for %s\n", name.c_str());
        CHECK(false);
      }
    }
  }
}

TEST(ChunkCountsFromHeaders) {
  for (const char* name :
       {"seq-none-64k.rio", "seq-snappy-64k.rio", "seq-gzip-64k.rio", "truncated-none-64k.rio",
        "truncated-gzip-64k.rio", "bad-crc-none-64k.rio"}) {
    Opened o = Open(name);
    CHECK_EQ(o.index.chunks.size(), 15u);
    CHECK_EQ(o.index.num_records, 8192u);
    CHECK_EQ(o.index.chunks[0].header.num_records, 611u);
    CHECK_EQ(o.index.chunks[1].header.num_records, 576u);
    CHECK_EQ(o.index.chunks[2].header.num_records, 536u);
  }
  for (const char* name :
       {"seq-none-default.rio", "seq-snappy-default.rio", "seq-gzip-default.rio"}) {
    CHECK_EQ(Open(name).index.chunks.size(), 1u);
  }
  Opened empty = Open("empty-file.rio");
  CHECK_EQ(empty.index.chunks.size(), 0u);
  CHECK_EQ(empty.index.num_records, 0u);
}

TEST(AnyRangeMatchesTheFullRead) {
  for (const char* name : {"seq-none-64k.rio", "seq-snappy-64k.rio", "seq-gzip-64k.rio"}) {
    Opened o = Open(name);
    ReadOutput all;
    CHECK_OK(ReadRecords(*o.file, o.index, 0, 8192, false, &all));
    const auto* ab = reinterpret_cast<const uint32_t*>(all.bounds.data());
    edl::test::Rng rng(11);
    for (int trial = 0; trial < 60; ++trial) {
      const uint64_t start = rng.Below(8193);
      const uint64_t count = trial == 0 ? 0 : rng.Below(static_cast<uint32_t>(8192 - start) + 1);
      ReadOutput part;
      CHECK_OK(ReadRecords(*o.file, o.index, start, count, false, &part));
      CHECK_EQ(part.first_record, start);
      CHECK_EQ(Delivered(part), count);
      const auto* pb = reinterpret_cast<const uint32_t*>(part.bounds.data());
      for (uint64_t i = 0; i < Delivered(part); ++i) {
        const std::string a(reinterpret_cast<const char*>(all.data.data()) + ab[2 * (start + i)],
                            ab[2 * (start + i) + 1] - ab[2 * (start + i)]);
        const std::string b(reinterpret_cast<const char*>(part.data.data()) + pb[2 * i],
                            pb[2 * i + 1] - pb[2 * i]);
        if (a != b) {
          CHECK(a == b);
          break;
        }
      }
    }
    ReadOutput bad;
    CHECK_EQ(ReadRecords(*o.file, o.index, 8000, 193, false, &bad).code(), ErrorCode::kOutOfRange);
    CHECK_EQ(ReadRecords(*o.file, o.index, 8193, 0, false, &bad).code(), ErrorCode::kOutOfRange);
  }
}

TEST(BadCrcStopsAtChunkZero) {
  Opened o = Open("bad-crc-none-64k.rio");
  ReadOutput out;
  CHECK_OK(ReadRecords(*o.file, o.index, 0, 8192, false, &out));
  CHECK(out.has_error);
  CHECK_EQ(out.error.status.code(), ErrorCode::kChecksum);
  CHECK_EQ(out.error.status.chunk(), 0);
  CHECK_EQ(out.error.status.offset(), 0);
  CHECK_EQ(out.error.records, 611u);
  CHECK_EQ(Delivered(out), 0u);
}

TEST(EmptyRangeTouchesNoChunk) {
  Opened o = Open("bad-crc-none-64k.rio");
  for (uint64_t start : {0, 5, 611, 8192}) {
    ReadOutput out;
    CHECK_OK(ReadRecords(*o.file, o.index, start, 0, false, &out));
    CHECK(!out.has_error);
    CHECK_EQ(out.data.size(), 0u);
  }
}

TEST(BadCrcSkipDeliversChunksOneToFourteen) {
  Opened o = Open("bad-crc-none-64k.rio");
  ReadOutput out;
  CHECK_OK(ReadRecords(*o.file, o.index, 0, 8192, true, &out));
  CHECK(!out.has_error);
  CHECK_EQ(out.skipped.size(), 1u);
  if (out.skipped.size() == 1) {
    CHECK_EQ(out.skipped[0].status.code(), ErrorCode::kChecksum);
    CHECK_EQ(out.skipped[0].status.chunk(), 0);
    CHECK_EQ(out.skipped[0].records, 611u);
  }
  CHECK_EQ(Delivered(out), 8192u - 611u);
  // They are exactly records 611..8191 of the intact file.
  Opened good = Open("seq-none-64k.rio");
  ReadOutput want;
  CHECK_OK(ReadRecords(*good.file, good.index, 611, 8192 - 611, false, &want));
  CHECK_EQ(StreamSha(out), StreamSha(want));
}

TEST(TruncatedFilesDeliver7673RecordsThenFail) {
  Opened intact = Open("seq-none-64k.rio");
  ReadOutput prefix;
  CHECK_OK(ReadRecords(*intact.file, intact.index, 0, 7673, false, &prefix));
  for (const char* name : {"truncated-none-64k.rio", "truncated-gzip-64k.rio"}) {
    Opened o = Open(name);
    CHECK_EQ(o.index.chunks.size(), 15u);
    CHECK_EQ(o.index.num_records, 8192u);
    for (bool skip : {false, true}) {
      ReadOutput out;
      CHECK_OK(ReadRecords(*o.file, o.index, 0, 8192, skip, &out));
      CHECK_EQ(Delivered(out), 7673u);
      CHECK_EQ(StreamSha(out), StreamSha(prefix));
      const ChunkFault* f = skip ? (out.skipped.empty() ? nullptr : &out.skipped[0])
                                 : (out.has_error ? &out.error : nullptr);
      CHECK(f != nullptr);
      if (f == nullptr) continue;
      CHECK_EQ(f->status.code(), ErrorCode::kTruncated);
      CHECK_EQ(f->status.chunk(), 14);
      CHECK_EQ(static_cast<uint64_t>(f->status.offset()), o.index.chunks[14].offset);
      CHECK_EQ(f->records, 8192u - 7673u);
    }
    // Reading only the intact chunks is fine.
    ReadOutput head;
    CHECK_OK(ReadRecords(*o.file, o.index, 100, 7000, false, &head));
    CHECK(!head.has_error);
    CHECK_EQ(Delivered(head), 7000u);
  }
}

TEST(TheIndexNamesAChunkThatRunsPastTheEndOfTheFile) {
  for (const char* name : {"truncated-none-64k.rio", "truncated-gzip-64k.rio"}) {
    Opened o = Open(name);
    CHECK(o.index.tail.ok());
    const Status& cut = o.index.truncated_chunk;
    CHECK_EQ(cut.code(), ErrorCode::kTruncated);
    CHECK_EQ(cut.chunk(), 14);
    CHECK_EQ(static_cast<uint64_t>(cut.offset()), o.index.chunks[14].offset);
    CHECK(o.index.chunks[14].offset + kHeaderSize + o.index.chunks[14].header.compressed_size >
          o.index.file_size);
    // An empty read at the end reports it without decoding; a read through the chunk reports it
    // once, as that chunk's fault.
    for (bool skip : {false, true}) {
      ReadOutput empty;
      CHECK_OK(ReadRecords(*o.file, o.index, 8192, 0, skip, &empty));
      const ChunkFault* f = skip ? (empty.skipped.empty() ? nullptr : &empty.skipped[0])
                                 : (empty.has_error ? &empty.error : nullptr);
      CHECK(f != nullptr);
      if (f != nullptr) CHECK_EQ(f->status.chunk(), 14);
      ReadOutput all;
      CHECK_OK(ReadRecords(*o.file, o.index, 0, 8192, skip, &all));
      CHECK_EQ(all.skipped.size() + (all.has_error ? 1u : 0u), 1u);
    }
  }
  for (const auto& [name, expected] : Manifest()) {
    if (name.rfind("truncated-", 0) == 0 || name == "empty-file.rio") continue;
    CHECK(Open(name).index.truncated_chunk.ok());
  }
}
