// TFRecord framing: known CRC vectors, frame decode limits, index scan, range reads, writer round
// trips, corruption and truncation.
#include <cstdlib>
#include <string>
#include <vector>

#include "file.h"
#include "test_util.h"
#include "tfrecord_format.h"
#include "tfrecord_frames.h"
#include "tfrecord_index.h"
#include "tfrecord_writer.h"

using namespace edl::tfrecord;  // NOLINT
using edl::recordio::ByteBuffer;
using edl::recordio::ErrorCode;
using edl::recordio::LocalFile;
using edl::recordio::MemoryFile;
using edl::recordio::Status;

namespace {

std::vector<std::string> Sample(int n) {
  edl::test::Rng rng(7);
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(rng.Bytes(rng.Below(i % 10 == 0 ? 5000 : 100), false));
  out[3].clear();  // an empty record
  return out;
}

ByteBuffer Frame(const std::vector<std::string>& records) {
  ByteBuffer b;
  for (const auto& r : records) {
    CHECK(AppendFrame(b, reinterpret_cast<const uint8_t*>(r.data()), r.size()));
  }
  return b;
}

std::vector<std::string> Decode(const uint8_t* p, size_t n, DecodeResult* out) {
  std::vector<uint32_t> bounds(2 * (n / kFrameOverhead + 1));
  *out = DecodeFrames(p, n, 0, bounds.size() / 2, bounds.data(), true, kMaxRecordSize);
  std::vector<std::string> got;
  for (uint64_t i = 0; i < out->records; ++i) {
    got.emplace_back(reinterpret_cast<const char*>(p) + bounds[2 * i],
                     bounds[2 * i + 1] - bounds[2 * i]);
  }
  return got;
}

}  // namespace

TEST(known_vectors) {
  // An empty record as TensorFlow writes it: length 0, masked CRC-32C of 8 zero bytes, and the
  // masked CRC-32C of nothing (0 masked = 0xa282ead8).
  ByteBuffer b;
  CHECK(AppendFrame(b, nullptr, 0));
  CHECK_EQ(b.size(), size_t{16});
  CHECK_EQ(LoadU64(b.data()), uint64_t{0});
  CHECK_EQ(LoadU32(b.data() + 12), 0xa282ead8u);
  // CRC-32C("123456789") = 0xe3069283 (the standard check value).
  const uint8_t digits[] = {'1', '2', '3', '4', '5', '6', '7', '8', '9'};
  CHECK_EQ(edl::recordio::Crc32c(digits, 9), 0xe3069283u);
  CHECK_EQ(std::string(DetectCompression(b.data(), b.size())), std::string("none"));
  const uint8_t gz[] = {0x1f, 0x8b, 8, 0};
  CHECK_EQ(std::string(DetectCompression(gz, 4)), std::string("gzip"));
  const uint8_t zl[] = {0x78, 0x9c, 0, 0};
  CHECK_EQ(std::string(DetectCompression(zl, 4)), std::string("zlib"));
  const uint8_t junk[] = {'h', 'e', 'l', 'l', 'o'};
  CHECK_EQ(std::string(DetectCompression(junk, 5)), std::string("unknown"));
}

TEST(decode_round_trip_and_partial_input) {
  auto records = Sample(50);
  ByteBuffer b = Frame(records);
  DecodeResult r;
  CHECK(Decode(b.data(), b.size(), &r) == records);
  CHECK(r.status.ok());
  CHECK_EQ(r.consumed, uint64_t{b.size()});
  CHECK(!r.need_more);
  // Every cut: the whole records before it, need_more, never an error.
  for (size_t cut = 0; cut < 700; cut += 7) {
    auto got = Decode(b.data(), cut, &r);
    CHECK(r.status.ok());
    CHECK(r.consumed <= cut);
    CHECK_EQ(r.need_more, r.consumed < cut);
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == records[i]);
  }
  // max_records stops early.
  std::vector<uint32_t> bounds(6);
  r = DecodeFrames(b.data(), b.size(), 0, 3, bounds.data(), true, kMaxRecordSize);
  CHECK_EQ(r.records, uint64_t{3});
}

TEST(decode_faults_name_offsets) {
  auto records = Sample(10);
  ByteBuffer b = Frame(records);
  const size_t at2 = 2 * kFrameOverhead + records[0].size() + records[1].size();
  std::vector<uint8_t> bad(b.data(), b.data() + b.size());
  bad[at2 + kHeaderSize] ^= 1;  // a data byte of record 2 (5000 bytes, not empty)
  DecodeResult r;
  auto got = Decode(bad.data(), bad.size(), &r);
  CHECK_EQ(got.size(), size_t{2});
  CHECK_EQ(r.status.code(), ErrorCode::kChecksum);
  CHECK_EQ(r.status.offset(), static_cast<int64_t>(at2));
  bad = std::vector<uint8_t>(b.data(), b.data() + b.size());
  bad[at2 + 2] ^= 1;  // length of record 2
  got = Decode(bad.data(), bad.size(), &r);
  CHECK_EQ(got.size(), size_t{2});
  CHECK_EQ(r.status.code(), ErrorCode::kChecksum);
  // A valid header announcing a huge record is TOO_LARGE, not an allocation.
  uint8_t huge[16] = {};
  StoreU64(huge, uint64_t{1} << 40);
  StoreU32(huge + 8, MaskedCrc32c(huge, 8));
  Decode(huge, sizeof huge, &r);
  CHECK_EQ(r.status.code(), ErrorCode::kTooLarge);
  std::vector<uint32_t> bounds(2);
  StoreU64(huge, 100);
  StoreU32(huge + 8, MaskedCrc32c(huge, 8));
  r = DecodeFrames(huge, sizeof huge, 0, 1, bounds.data(), true, 10);
  CHECK_EQ(r.status.code(), ErrorCode::kTooLarge);
}

TEST(index_and_range_reads) {
  auto records = Sample(300);
  ByteBuffer b = Frame(records);
  MemoryFile file(b.data(), b.size());
  std::vector<uint64_t> offsets;
  CHECK_OK(ScanIndex(file, &offsets, 64));  // tiny blocks: headers straddle block ends
  CHECK_EQ(offsets.size(), size_t{301});
  CHECK_EQ(offsets.back(), uint64_t{b.size()});
  ByteBuffer data;
  std::vector<uint32_t> bounds;
  CHECK_OK(ReadRange(file, offsets, 17, 40, data, &bounds));
  CHECK_EQ(bounds.size(), size_t{80});
  for (size_t i = 0; i < 40; ++i) {
    std::string got(reinterpret_cast<const char*>(data.data()) + bounds[2 * i],
                    bounds[2 * i + 1] - bounds[2 * i]);
    CHECK(got == records[17 + i]);
  }
  CHECK_EQ(ReadRange(file, offsets, 299, 2, data, &bounds).code(), ErrorCode::kOutOfRange);
  // Truncated: the index covers the records before the cut and names the cut record's offset.
  MemoryFile cut(b.data(), offsets[100] + 5);
  CHECK_EQ(ScanIndex(cut, &offsets).code(), ErrorCode::kTruncated);
  CHECK_EQ(offsets.size(), size_t{101});
  MemoryFile cut2(b.data(), offsets[100] + kHeaderSize + 1);
  Status s = ScanIndex(cut2, &offsets);
  CHECK_EQ(s.code(), ErrorCode::kTruncated);
  CHECK_EQ(s.offset(), static_cast<int64_t>(offsets[100]));
}

TEST(writer_round_trip) {
  const std::string path = edl::test::MakeTempDir("edl-tfrecord-test") + "/round-trip.tfrecord";
  auto records = Sample(2000);
  {
    auto w = Writer::Create(path);
    CHECK_OK(w.status());
    for (const auto& r : records)
      CHECK_OK(w.value()->Write(reinterpret_cast<const uint8_t*>(r.data()), r.size()));
    CHECK_OK(w.value()->Close());
    CHECK_EQ(w.value()->records(), uint64_t{2000});
    CHECK_EQ(w.value()->Write(nullptr, 0).code(), ErrorCode::kClosed);
  }
  auto f = LocalFile::Open(path);
  CHECK_OK(f.status());
  std::vector<uint64_t> offsets;
  CHECK_OK(ScanIndex(*f.value(), &offsets));
  CHECK_EQ(offsets.size(), size_t{2001});
  ByteBuffer data;
  std::vector<uint32_t> bounds;
  CHECK_OK(ReadRange(*f.value(), offsets, 0, 2000, data, &bounds));
  for (size_t i = 0; i < 2000; ++i) {
    std::string got(reinterpret_cast<const char*>(data.data()) + bounds[2 * i],
                    bounds[2 * i + 1] - bounds[2 * i]);
    CHECK(got == records[i]);
  }
  std::remove(path.c_str());
}

TEST(decode_records_from_memory) {
  auto records = Sample(50);
  ByteBuffer framed = Frame(records);
  std::vector<uint64_t> offsets;
  MemoryFile file(framed.data(), framed.size());
  CHECK_OK(ScanIndex(file, &offsets));
  // A range cut at frame boundaries, as ReadRange reads it.
  std::vector<uint32_t> bounds;
  const uint64_t base = offsets[10];
  CHECK_OK(DecodeRecords(framed.data() + base, offsets[30] - base, base, kAllRecords,
                         kMaxRecordSize, &bounds));
  CHECK_EQ(bounds.size(), size_t{40});
  for (size_t i = 0; i < 20; ++i) {
    std::string got(reinterpret_cast<const char*>(framed.data() + base) + bounds[2 * i],
                    bounds[2 * i + 1] - bounds[2 * i]);
    CHECK(got == records[10 + i]);
  }
  // Fewer whole frames than asked for; a frame cut short; a header cut short: TRUNCATED at the
  // frame, with the records before it delivered, and the header scan's messages.
  bounds.clear();
  Status s =
      DecodeRecords(framed.data() + base, offsets[30] - base, base, 21, kMaxRecordSize, &bounds);
  CHECK_EQ(s.code(), ErrorCode::kTruncated);
  CHECK_EQ(s.offset(), static_cast<int64_t>(offsets[30]));
  CHECK_EQ(bounds.size(), size_t{40});
  for (const uint64_t cut : {offsets[30] - 1, offsets[29] + 5}) {
    bounds.clear();
    s = DecodeRecords(framed.data(), cut, 0, kAllRecords, kMaxRecordSize, &bounds);
    CHECK_EQ(s.code(), ErrorCode::kTruncated);
    CHECK_EQ(s.offset(), static_cast<int64_t>(offsets[29]));
    CHECK_EQ(bounds.size(), size_t{58});
    std::vector<uint64_t> scanned;
    const Status scan = ScanIndex(MemoryFile(framed.data(), cut), &scanned);
    CHECK_EQ(s.message(), scan.message());
  }
  // A lying count does not size the output: at most one record per 16 bytes.
  bounds.clear();
  CHECK_OK(DecodeRecords(framed.data(), offsets[2], 0, 2, kMaxRecordSize, &bounds));
  std::vector<uint32_t> fresh;
  s = DecodeRecords(framed.data(), offsets[2], 0, ~uint64_t{0} - 1, kMaxRecordSize, &fresh);
  CHECK_EQ(s.code(), ErrorCode::kTruncated);
  CHECK_EQ(fresh.size(), size_t{4});
  CHECK(fresh.capacity() <= 2 * (offsets[2] / kFrameOverhead));
}
