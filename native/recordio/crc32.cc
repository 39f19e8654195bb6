#include "crc32.h"

#include <array>
#include <cstring>

#include "libdeflate.h"

#if defined(__x86_64__) || defined(__i386__)
#define EDL_X86 1
#include <nmmintrin.h>
#endif

namespace edl::recordio {

uint32_t Crc32(const void* data, size_t n, uint32_t crc) { return libdeflate_crc32(crc, data, n); }

namespace {

using Table = std::array<std::array<uint32_t, 256>, 8>;

Table MakeCrc32cTables() {
  Table t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i) {
    for (size_t s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
  }
  return t;
}

const Table& Crc32cTables() {
  static const Table tables = MakeCrc32cTables();
  return tables;
}

#if EDL_X86
// The crc32 instruction has a latency of 3 cycles but a throughput of 1: three independent
// streams over consecutive blocks run ~3x faster than one. Their CRCs are merged by shifting a
// stream's CRC over the bytes of the blocks after it, which for a fixed block size is a linear map
// on 32 bits, done with four 256-entry tables.
constexpr size_t kLaneBytes = 4096;

// CRC-32C register (no pre/post inversion) advanced over `n` zero bytes, bit by bit.
uint32_t ShiftSlow(uint32_t c, size_t n) {
  for (size_t i = 0; i < n * 8; ++i) c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
  return c;
}

struct ShiftTable {
  uint32_t t[4][256];
};

ShiftTable MakeShiftTable(size_t n) {
  uint32_t bit[32];
  for (int b = 0; b < 32; ++b) bit[b] = ShiftSlow(1u << b, n);
  ShiftTable s{};
  for (int k = 0; k < 4; ++k) {
    for (uint32_t v = 0; v < 256; ++v) {
      uint32_t r = 0;
      for (int b = 0; b < 8; ++b) {
        if ((v >> b) & 1u) r ^= bit[8 * k + b];
      }
      s.t[k][v] = r;
    }
  }
  return s;
}

inline uint32_t Shift(const ShiftTable& s, uint32_t c) {
  return s.t[0][c & 0xff] ^ s.t[1][(c >> 8) & 0xff] ^ s.t[2][(c >> 16) & 0xff] ^ s.t[3][c >> 24];
}

const ShiftTable& LaneShift() {
  static const ShiftTable table = MakeShiftTable(kLaneBytes);
  return table;
}

__attribute__((target("sse4.2"))) uint32_t Crc32cSse42(const void* data, size_t n, uint32_t crc) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t c = ~crc;
  if (n >= 3 * kLaneBytes) {
    const ShiftTable& shift = LaneShift();
    do {
      uint64_t c1 = 0;
      uint64_t c2 = 0;
      for (size_t i = 0; i < kLaneBytes; i += 8) {
        uint64_t v0;
        uint64_t v1;
        uint64_t v2;
        std::memcpy(&v0, p + i, 8);
        std::memcpy(&v1, p + kLaneBytes + i, 8);
        std::memcpy(&v2, p + 2 * kLaneBytes + i, 8);
        c = _mm_crc32_u64(c, v0);
        c1 = _mm_crc32_u64(c1, v1);
        c2 = _mm_crc32_u64(c2, v2);
      }
      // Lanes 1 and 2 started from 0: crc(A|B|C) = shift(shift(a) ^ b) ^ c.
      c = Shift(shift, Shift(shift, static_cast<uint32_t>(c)) ^ static_cast<uint32_t>(c1)) ^
          static_cast<uint32_t>(c2);
      p += 3 * kLaneBytes;
      n -= 3 * kLaneBytes;
    } while (n >= 3 * kLaneBytes);
  }
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    n -= 8;
  }
  auto c32 = static_cast<uint32_t>(c);
  while (n > 0) {
    c32 = _mm_crc32_u8(c32, *p++);
    --n;
  }
  return ~c32;
}

bool HasSse42() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

}  // namespace

uint32_t Crc32cPortable(const void* data, size_t n, uint32_t crc) {
  const Table& t = Crc32cTables();
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
  while (n >= 8) {
    uint32_t lo;
    uint32_t hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    lo = __builtin_bswap32(lo);
    hi = __builtin_bswap32(hi);
#endif
    lo ^= c;
    c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
        t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    c = (c >> 8) ^ t[0][(c ^ *p++) & 0xff];
    --n;
  }
  return ~c;
}

uint32_t Crc32c(const void* data, size_t n, uint32_t crc) {
#if EDL_X86
  if (HasSse42()) return Crc32cSse42(data, n, crc);
#endif
  return Crc32cPortable(data, n, crc);
}

const char* Crc32Implementation() {
#if EDL_X86
  static const bool has = __builtin_cpu_supports("pclmul");  // what libdeflate dispatches on
  return has ? "pclmul" : "table";
#else
  return "table";
#endif
}

const char* Crc32cImplementation() {
#if EDL_X86
  return HasSse42() ? "sse4.2" : "table";
#else
  return "table";
#endif
}

}  // namespace edl::recordio
