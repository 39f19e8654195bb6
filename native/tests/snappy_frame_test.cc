#include "snappy_frame.h"

#include <string>

#include "crc32.h"
#include "format.h"
#include "snappy.h"
#include "test_util.h"

using namespace edl::recordio;  // NOLINT

namespace {

std::string Decode(const std::string& in, Status* s, uint64_t max_out = kMaxDecodedBytes) {
  ByteBuffer out;
  *s = SnappyFrameDecode(reinterpret_cast<const uint8_t*>(in.data()), in.size(), out, max_out);
  return std::string(reinterpret_cast<const char*>(out.data()), out.size());
}

std::string Encode(const std::string& in) {
  ByteBuffer out;
  CHECK(SnappyFrameEncode(reinterpret_cast<const uint8_t*>(in.data()), in.size(), out));
  return std::string(reinterpret_cast<const char*>(out.data()), out.size());
}

std::string Frame(uint8_t type, const std::string& body) {
  std::string f(4, '\0');
  f[0] = static_cast<char>(type);
  f[1] = static_cast<char>(body.size() & 0xff);
  f[2] = static_cast<char>((body.size() >> 8) & 0xff);
  f[3] = static_cast<char>((body.size() >> 16) & 0xff);
  return f + body;
}

std::string Crc(const std::string& data) {
  std::string c(4, '\0');
  StoreLE32(reinterpret_cast<uint8_t*>(&c[0]), MaskCrc(Crc32c(data.data(), data.size())));
  return c;
}

const std::string kIdentifier("\xff\x06\x00\x00sNaPpY", 10);

std::string Uncompressed(const std::string& data) { return Frame(0x01, Crc(data) + data); }

std::string Compressed(const std::string& data) {
  std::string c;
  snappy::Compress(data.data(), data.size(), &c);
  return Frame(0x00, Crc(data) + c);
}

}  // namespace

TEST(RoundTripSizes) {
  edl::test::Rng rng(1);
  for (size_t n : {0, 1, 100, 65535, 65536, 65537, 200000, 1 << 20}) {
    for (bool compressible : {true, false}) {
      const std::string in = rng.Bytes(n, compressible);
      const std::string enc = Encode(in);
      CHECK(enc.compare(0, 10, kIdentifier) == 0);
      Status s;
      CHECK_EQ(Decode(enc, &s), in);
      CHECK_OK(s);
      // Frames hold at most 64 KiB of input: count them.
      size_t pos = 10;
      size_t frames = 0;
      bool any_compressed = false;
      while (pos + 4 <= enc.size()) {
        const size_t len = static_cast<uint8_t>(enc[pos + 1]) |
                           (static_cast<size_t>(static_cast<uint8_t>(enc[pos + 2])) << 8) |
                           (static_cast<size_t>(static_cast<uint8_t>(enc[pos + 3])) << 16);
        any_compressed |= enc[pos] == 0x00;
        pos += 4 + len;
        ++frames;
      }
      CHECK_EQ(pos, enc.size());
      CHECK_EQ(frames, (n + 65535) / 65536);
      if (n >= 100) CHECK_EQ(any_compressed, compressible);
    }
  }
}

TEST(IncompressibleIsStored) {
  edl::test::Rng rng(2);
  const std::string in = rng.Bytes(5000, false);
  const std::string enc = Encode(in);
  CHECK_EQ(static_cast<int>(enc[10]), 0x01);
  CHECK_EQ(enc.size(), 10 + 4 + 4 + in.size());
}

TEST(UncompressedPaddingSkippableAndRepeatedIdentifier) {
  const std::string stream = kIdentifier + Uncompressed("hello ") + Frame(0xfe, std::string(7, 0)) +
                             Frame(0x80, "skip me") + Frame(0xfd, "") + kIdentifier +
                             Compressed("world world world world world") + Frame(0xfe, "");
  Status s;
  CHECK_EQ(Decode(stream, &s), "hello world world world world world");
  CHECK_OK(s);
}

TEST(EmptyDataFramesAndEmptyStream) {
  Status s;
  CHECK_EQ(Decode("", &s), "");
  CHECK_OK(s);
  CHECK_EQ(Decode(kIdentifier + Uncompressed("") + Compressed(""), &s), "");
  CHECK_OK(s);
}

// Found by fuzz_snappy: a compressed frame that decodes to nothing but holds a zero-length
// literal made snappy memcpy into a null output (undefined behaviour) when nothing had been
// decoded before it. It is validated without writing, and a bad one is still rejected.
TEST(EmptyCompressedFrameWithZeroLengthLiteral) {
  const std::string id = std::string("\xff\x06\x00\x00sNaPpY", 10);
  // Uncompressed length 0, then a literal tag of length 1 with no byte: invalid.
  const std::string bad = std::string("\x00\x00", 2);
  Status s;
  Decode(id + Frame(0x00, Crc("") + bad), &s);
  CHECK_EQ(s.code(), ErrorCode::kBadCompression);
  // The input fuzz_snappy found (zero-length output before the faulty frame), whole.
  const std::string found = std::string(
      "\xff\x06\x00\x00\x73\x4e\x61\x50\x70\x59\x00\x06\x00\x00\x01\x00"
      "\x60\x30\x00\x00\xd2\x28\x73\x4e\x61\x50\x70\x59\x00\x70\x00\x00"
      "\x9d\x47\x02\x9c\x70\x00\x00\x9d\x47\x9c\xfa\x88\x11\x00\x78\xfe"
      "\x01\x3b\xfe\x01\x00\xfe\x01\x00\xff\x06\x00\xfe",
      60);
  Decode(found, &s);
  CHECK(!s.ok());
  // A valid empty compressed frame (just the varint 0) still decodes to nothing.
  CHECK_EQ(Decode(id + Frame(0x00, Crc("") + std::string("\x00", 1)), &s), "");
  CHECK_OK(s);
}

TEST(BadFrameCrcIsChecksum) {
  std::string stream = kIdentifier + Uncompressed("abc");
  stream[14] ^= 1;  // inside the masked CRC
  Status s;
  Decode(stream, &s);
  CHECK_EQ(s.code(), ErrorCode::kChecksum);
  CHECK_EQ(s.offset(), 10);

  const std::string bad = kIdentifier + Uncompressed("abc") +
                          Frame(0x00, Crc("not this") + std::string(Compressed("yyyy")).substr(8));
  Decode(bad, &s);
  CHECK_EQ(s.code(), ErrorCode::kChecksum);
}

TEST(ReservedUnskippableIsBadCompression) {
  for (int type : {0x02, 0x10, 0x7f}) {
    Status s;
    Decode(kIdentifier + Frame(static_cast<uint8_t>(type), "xx"), &s);
    CHECK_EQ(s.code(), ErrorCode::kBadCompression);
    CHECK_EQ(s.offset(), 10);
  }
}

TEST(MalformedStreams) {
  Status s;
  Decode(Uncompressed("abc"), &s);  // no stream identifier
  CHECK_EQ(s.code(), ErrorCode::kBadCompression);
  Decode(std::string("\xff\x06\x00\x00sNaPpZ", 10), &s);
  CHECK_EQ(s.code(), ErrorCode::kBadCompression);
  Decode(kIdentifier + std::string("\x01\x10\x00", 3), &s);  // header cut short
  CHECK_EQ(s.code(), ErrorCode::kBadCompression);
  const std::string full = kIdentifier + Uncompressed("abcdef");
  for (size_t cut = 11; cut < full.size(); ++cut) {
    Decode(full.substr(0, cut), &s);
    CHECK_EQ(s.code(), ErrorCode::kBadCompression);
  }
  Decode(kIdentifier + Frame(0x01, "abc"), &s);  // shorter than its CRC
  CHECK_EQ(s.code(), ErrorCode::kBadCompression);
  Decode(kIdentifier + Frame(0x00, Crc("a") + "\xff\xff\xff\xff\x0f"), &s);  // bad varint/length
  CHECK_EQ(s.code(), ErrorCode::kBadCompression);
  std::string compressed = Compressed(std::string(5000, 'q'));
  compressed.resize(compressed.size() - 2);
  compressed[1] = static_cast<char>(compressed.size() - 4);
  Decode(kIdentifier + compressed, &s);
  CHECK(s.code() == ErrorCode::kBadCompression || s.code() == ErrorCode::kChecksum);
}

TEST(OversizedFramesRejected) {
  Status s;
  const std::string big(65537, 'z');
  Decode(kIdentifier + Uncompressed(big), &s);
  CHECK_EQ(s.code(), ErrorCode::kBadCompression);
  Decode(kIdentifier + Compressed(big), &s);
  CHECK_EQ(s.code(), ErrorCode::kBadCompression);
  const std::string max(65536, 'z');
  CHECK_EQ(Decode(kIdentifier + Compressed(max) + Uncompressed(max), &s).size(), 131072u);
  CHECK_OK(s);
}

TEST(OutputLimitIsTooLarge) {
  Status s;
  Decode(Encode(std::string(100000, 'a')), &s, 1000);
  CHECK_EQ(s.code(), ErrorCode::kTooLarge);
}
