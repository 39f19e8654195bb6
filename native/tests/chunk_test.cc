#include "chunk.h"

#include <string>
#include <vector>

#include "crc32.h"
#include "gzip.h"
#include "test_util.h"

using namespace edl::recordio;  // NOLINT

namespace {

std::string Framed(const std::vector<std::string>& records) {
  std::string s;
  for (const auto& r : records) {
    uint8_t len[4];
    StoreLE32(len, static_cast<uint32_t>(r.size()));
    s.append(reinterpret_cast<const char*>(len), 4);
    s += r;
  }
  return s;
}

std::vector<std::string> Sample() {
  edl::test::Rng rng(5);
  std::vector<std::string> r = {"", "a",   "", rng.Bytes(70000, true), rng.Bytes(100000, false),
                                "", "last"};
  for (int i = 0; i < 300; ++i) r.push_back(rng.Bytes(rng.Below(200), true));
  r.push_back("");
  return r;
}

// Encodes and decodes one chunk; returns the records read back.
std::vector<std::string> RoundTrip(Compressor c, const std::vector<std::string>& records,
                                   Status* s) {
  const std::string framed = Framed(records);
  GzipEncoder gz(6);
  ByteBuffer chunk;
  CHECK_OK(EncodeChunk(c, reinterpret_cast<const uint8_t*>(framed.data()), framed.size(),
                       static_cast<uint32_t>(records.size()), &gz, chunk));
  CHECK(chunk.size() >= kHeaderSize);
  const ChunkHeader h = ParseHeader(chunk.data());
  CHECK_EQ(h.magic, kMagic);
  CHECK_EQ(h.compressor, static_cast<uint32_t>(c));
  CHECK_EQ(h.num_records, records.size());
  CHECK_EQ(size_t{h.compressed_size}, chunk.size() - kHeaderSize);
  ByteBuffer out;
  ByteBuffer bounds;
  const std::string prefix = "xyz";  // decoding appends after what is already there
  out.Append(prefix.data(), prefix.size());
  *s = DecodeChunk(h, chunk.data() + kHeaderSize, chunk.size() - kHeaderSize, out, bounds);
  std::vector<std::string> got;
  const auto* b = reinterpret_cast<const uint32_t*>(bounds.data());
  for (size_t i = 0; i < bounds.size() / 8; ++i) {
    CHECK(b[2 * i] >= prefix.size());
    got.emplace_back(reinterpret_cast<const char*>(out.data()) + b[2 * i], b[2 * i + 1] - b[2 * i]);
  }
  return got;
}

}  // namespace

TEST(RoundTripEveryCompressor) {
  const auto records = Sample();
  for (Compressor c : {Compressor::kNone, Compressor::kSnappy, Compressor::kGzip}) {
    Status s;
    CHECK(RoundTrip(c, records, &s) == records);
    CHECK_OK(s);
    CHECK(RoundTrip(c, {}, &s).empty());
    CHECK_OK(s);
    CHECK(RoundTrip(c, {"", "", ""}, &s) == std::vector<std::string>({"", "", ""}));
    CHECK_OK(s);
  }
}

TEST(BadCrcIsChecksum) {
  const std::string framed = Framed({"hello", "world"});
  ByteBuffer chunk;
  CHECK_OK(EncodeChunk(Compressor::kNone, reinterpret_cast<const uint8_t*>(framed.data()),
                       framed.size(), 2, nullptr, chunk));
  chunk.data()[kHeaderSize + 6] ^= 0x20;
  ByteBuffer out;
  ByteBuffer bounds;
  const Status s = DecodeChunk(ParseHeader(chunk.data()), chunk.data() + kHeaderSize,
                               chunk.size() - kHeaderSize, out, bounds);
  CHECK_EQ(s.code(), ErrorCode::kChecksum);
  CHECK_EQ(bounds.size(), 0u);
}

namespace {

Status DecodeWithHeader(const std::string& payload, uint32_t compressor, uint32_t records) {
  ChunkHeader h;
  h.compressor = compressor;
  h.compressed_size = static_cast<uint32_t>(payload.size());
  h.num_records = records;
  h.crc = Crc32(payload.data(), payload.size());
  ByteBuffer out;
  ByteBuffer bounds;
  return DecodeChunk(h, reinterpret_cast<const uint8_t*>(payload.data()), payload.size(), out,
                     bounds);
}

}  // namespace

TEST(RecordFramingErrors) {
  const std::string framed = Framed({"hello", "", "world"});
  CHECK_OK(DecodeWithHeader(framed, 0, 3));
  // More records claimed than present; a length running past the end; stray bytes.
  CHECK_EQ(DecodeWithHeader(framed, 0, 4).code(), ErrorCode::kTruncated);
  CHECK_EQ(DecodeWithHeader(framed.substr(0, framed.size() - 1), 0, 3).code(),
           ErrorCode::kTruncated);
  CHECK_EQ(DecodeWithHeader(framed.substr(0, 2), 0, 1).code(), ErrorCode::kTruncated);
  CHECK_EQ(DecodeWithHeader(framed, 0, 2).code(), ErrorCode::kBadCompression);
  CHECK_EQ(DecodeWithHeader(framed + "x", 0, 3).code(), ErrorCode::kBadCompression);
  // A huge claimed length must not be trusted.
  std::string huge = framed;
  huge[0] = huge[1] = huge[2] = huge[3] = '\xff';
  CHECK_EQ(DecodeWithHeader(huge, 0, 3).code(), ErrorCode::kTruncated);
  // A record count that cannot fit in the payload is refused before anything is reserved.
  CHECK_EQ(DecodeWithHeader(framed, 0, 0xFFFFFFFFu).code(), ErrorCode::kTruncated);
  CHECK_EQ(DecodeWithHeader(framed, 7, 3).code(), ErrorCode::kUnknownCompressor);
  CHECK_EQ(DecodeWithHeader(framed, 1, 3).code(), ErrorCode::kBadCompression);
  CHECK_EQ(DecodeWithHeader(framed, 2, 3).code(), ErrorCode::kBadCompression);
  CHECK_OK(DecodeWithHeader("", 0, 0));
}

TEST(SplitSkipTake) {
  const std::string framed = Framed({"r0", "r1", "", "r3", "r4"});
  const auto* d = reinterpret_cast<const uint8_t*>(framed.data());
  uint32_t b[10];
  CHECK_OK(SplitRecords(d, framed.size(), 5, 1, 3, 100, b));
  CHECK_EQ(b[0], 100u + 10);  // r1 starts after r0 (4+2) and its own prefix
  CHECK_EQ(b[1], 100u + 12);
  CHECK_EQ(b[2], b[3]);  // the empty record
  CHECK_EQ(b[4], 100u + 20);
  CHECK_EQ(b[5], 100u + 22);
  CHECK_OK(SplitRecords(d, framed.size(), 5, 5, 0, 0, b));
  CHECK_EQ(SplitRecords(d, framed.size(), 6, 0, 5, 0, b).code(), ErrorCode::kTruncated);
}
