#include "gzip.h"

#include <string>

#include "format.h"
#include "test_util.h"

using namespace edl::recordio;  // NOLINT

namespace {

std::string Encode(const std::string& in, int level) {
  GzipEncoder enc(level);
  ByteBuffer out;
  CHECK(enc.Encode(reinterpret_cast<const uint8_t*>(in.data()), in.size(), out));
  return std::string(reinterpret_cast<const char*>(out.data()), out.size());
}

std::string Decode(const std::string& in, Status* s, uint64_t max_out = kMaxDecodedBytes) {
  ByteBuffer out;
  *s = GzipDecode(reinterpret_cast<const uint8_t*>(in.data()), in.size(), out, max_out);
  return std::string(reinterpret_cast<const char*>(out.data()), out.size());
}

}  // namespace

TEST(RoundTripAllLevels) {
  edl::test::Rng rng(3);
  for (int level = 0; level <= 12; ++level) {
    for (size_t n : {0, 1, 1000, 300000}) {
      const std::string in = rng.Bytes(n, level % 2 == 0);
      const std::string gz = Encode(in, level);
      CHECK_EQ(static_cast<uint8_t>(gz[0]), 0x1f);
      CHECK_EQ(static_cast<uint8_t>(gz[1]), 0x8b);
      Status s;
      CHECK_EQ(Decode(gz, &s), in);
      CHECK_OK(s);
    }
  }
}

TEST(MultipleMembers) {
  const std::string a = Encode("first member, ", 6);
  const std::string b = Encode(std::string(100000, 'b'), 1);
  const std::string c = Encode("", 9);
  Status s;
  CHECK_EQ(Decode(a + b + c + a, &s),
           "first member, " + std::string(100000, 'b') + "first member, ");
  CHECK_OK(s);
}

TEST(TruncatedMemberIsAnErrorAtEveryCut) {
  edl::test::Rng rng(4);
  const std::string gz = Encode(rng.Bytes(20000, true), 6);
  for (size_t cut = 0; cut < gz.size(); cut += (cut < 64 || cut + 64 > gz.size()) ? 1 : 97) {
    Status s;
    Decode(gz.substr(0, cut), &s);
    CHECK_EQ(s.code(), ErrorCode::kBadCompression);
  }
  // A complete member followed by a cut one is an error too, not a short success.
  Status s;
  Decode(gz + gz.substr(0, gz.size() - 3), &s);
  CHECK_EQ(s.code(), ErrorCode::kBadCompression);
  CHECK_EQ(s.offset(), static_cast<int64_t>(gz.size()));
}

TEST(CorruptTrailerAndGarbage) {
  std::string gz = Encode(std::string(5000, 'x'), 6);
  std::string bad_crc = gz;
  bad_crc[gz.size() - 6] ^= 0x40;
  Status s;
  Decode(bad_crc, &s);
  CHECK_EQ(s.code(), ErrorCode::kBadCompression);
  std::string bad_size = gz;
  bad_size[gz.size() - 1] ^= 0x01;
  Decode(bad_size, &s);
  CHECK_EQ(s.code(), ErrorCode::kBadCompression);
  Decode(gz + "garbage after the member", &s);
  CHECK_EQ(s.code(), ErrorCode::kBadCompression);
  Decode("definitely not gzip at all!", &s);
  CHECK_EQ(s.code(), ErrorCode::kBadCompression);
}

TEST(WrongSizeHintStillDecodes) {
  // ISIZE says 0 bytes for the first member of two: decoding must grow, not truncate.
  const std::string a = Encode(std::string(1 << 20, 'a'), 6);
  const std::string b = Encode("", 6);
  Status s;
  CHECK_EQ(Decode(a + b, &s).size(), size_t{1} << 20);
  CHECK_OK(s);
}

TEST(OutputLimitIsTooLarge) {
  Status s;
  Decode(Encode(std::string(1 << 20, 'a'), 6), &s, 1000);
  CHECK_EQ(s.code(), ErrorCode::kTooLarge);
}
