// RecordIO on-disk format (github.com/wangkuiyi/recordio): constants and header (de)serialisation.
#ifndef EDL_RECORDIO_FORMAT_H_
#define EDL_RECORDIO_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace edl::recordio {

/// Chunk header magic number (stored little-endian as 04 03 02 01).
inline constexpr uint32_t kMagic = 0x01020304u;
/// Size of a chunk header: magic, crc32, compressor, compressed size, record count.
inline constexpr size_t kHeaderSize = 20;
/// Size of the little-endian length prefix in front of each record.
inline constexpr size_t kLengthPrefixSize = 4;

enum class Compressor : uint32_t { kNone = 0, kSnappy = 1, kGzip = 2 };

inline bool IsKnownCompressor(uint32_t c) { return c <= 2; }

/// Largest decoded chunk (and batch) we build: offsets cross into JavaScript as uint32.
inline constexpr uint64_t kMaxDecodedBytes = 0xFFFFFFFFull;
/// Deflate cannot expand more than 1032:1; anything beyond is a corrupt or hostile stream.
inline constexpr uint64_t kMaxGzipRatio = 1032;
/// Snappy framing: a data frame holds at most 65536 uncompressed bytes (framing_format.txt).
inline constexpr size_t kSnappyMaxFrameData = 65536;

struct ChunkHeader {
  uint32_t magic = kMagic;
  uint32_t crc = 0;
  uint32_t compressor = 0;
  uint32_t compressed_size = 0;
  uint32_t num_records = 0;
};

inline uint32_t LoadLE32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap32(v);
#endif
  return v;
}

inline void StoreLE32(uint8_t* p, uint32_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap32(v);
#endif
  std::memcpy(p, &v, 4);
}

inline ChunkHeader ParseHeader(const uint8_t* p) {
  ChunkHeader h;
  h.magic = LoadLE32(p);
  h.crc = LoadLE32(p + 4);
  h.compressor = LoadLE32(p + 8);
  h.compressed_size = LoadLE32(p + 12);
  h.num_records = LoadLE32(p + 16);
  return h;
}

inline void SerializeHeader(const ChunkHeader& h, uint8_t* p) {
  StoreLE32(p, h.magic);
  StoreLE32(p + 4, h.crc);
  StoreLE32(p + 8, h.compressor);
  StoreLE32(p + 12, h.compressed_size);
  StoreLE32(p + 16, h.num_records);
}

const char* CompressorName(uint32_t c);

}  // namespace edl::recordio

#endif  // EDL_RECORDIO_FORMAT_H_
