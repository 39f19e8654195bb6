#include <string>

#include "crc32.h"
#include "test_util.h"

using namespace edl::recordio;  // NOLINT

TEST(Crc32KnownVectors) {
  CHECK_EQ(Crc32("", 0), 0u);
  CHECK_EQ(Crc32("123456789", 9), 0xCBF43926u);
  const std::string fox = "The quick brown fox jumps over the lazy dog";
  CHECK_EQ(Crc32(fox.data(), fox.size()), 0x414FA339u);
  // Continuing a CRC over a split input gives the CRC of the whole.
  CHECK_EQ(Crc32("56789", 5, Crc32("1234", 4)), 0xCBF43926u);
}

TEST(Crc32cKnownVectors) {
  CHECK_EQ(Crc32c("", 0), 0u);
  CHECK_EQ(Crc32c("123456789", 9), 0xE3069283u);
  CHECK_EQ(Crc32cPortable("123456789", 9), 0xE3069283u);
  // RFC 3720 B.4: 32 bytes of zeros, of 0xff, ascending and descending.
  std::string zeros(32, '\0');
  std::string ones(32, '\xff');
  std::string up(32, '\0');
  std::string down(32, '\0');
  for (int i = 0; i < 32; ++i) {
    up[i] = static_cast<char>(i);
    down[i] = static_cast<char>(31 - i);
  }
  CHECK_EQ(Crc32c(zeros.data(), 32), 0x8A9136AAu);
  CHECK_EQ(Crc32c(ones.data(), 32), 0x62A8AB43u);
  CHECK_EQ(Crc32c(up.data(), 32), 0x46DD794Eu);
  CHECK_EQ(Crc32c(down.data(), 32), 0x113FDB5Cu);
  CHECK_EQ(Crc32cPortable(down.data(), 32), 0x113FDB5Cu);
}

TEST(Crc32cHardwareMatchesTable) {
  edl::test::Rng rng(7);
  for (size_t n : {0, 1, 7, 8, 9, 63, 64, 65, 1000, 4096, 65536, 100003}) {
    const std::string s = rng.Bytes(n, false);
    for (size_t off : {0, 1, 3}) {
      if (off > n) continue;
      CHECK_EQ(Crc32c(s.data() + off, n - off), Crc32cPortable(s.data() + off, n - off));
      CHECK_EQ(Crc32c(s.data() + off, n - off, 0x12345678u),
               Crc32cPortable(s.data() + off, n - off, 0x12345678u));
    }
  }
}

TEST(SnappyMask) {
  // Masking as in framing_format.txt: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
  CHECK_EQ(MaskCrc(0), 0xa282ead8u);
  CHECK_EQ(MaskCrc(0xE3069283u), ((0xE3069283u >> 15) | (0xE3069283u << 17)) + 0xa282ead8u);
  CHECK_EQ(Crc32c("a", 1), 0xC1D04330u);
}

TEST(ImplementationNames) {
  const std::string c32 = Crc32Implementation();
  const std::string c32c = Crc32cImplementation();
  CHECK(c32 == "pclmul" || c32 == "table");
  CHECK(c32c == "sse4.2" || c32c == "table");
}
