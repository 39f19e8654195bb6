// CRC-32 (IEEE, chunk headers) and CRC-32C (Castagnoli, snappy frames) with runtime dispatch.
#ifndef EDL_RECORDIO_CRC32_H_
#define EDL_RECORDIO_CRC32_H_

#include <cstddef>
#include <cstdint>

namespace edl::recordio {

/// CRC-32/IEEE (zlib, Go hash/crc32.ChecksumIEEE). Pass the previous result to continue.
uint32_t Crc32(const void* data, size_t n, uint32_t crc = 0);

/// CRC-32C (Castagnoli). Pass the previous result to continue.
uint32_t Crc32c(const void* data, size_t n, uint32_t crc = 0);

/// Table-driven CRC-32C (slice-by-8), exposed so tests can compare it with the hardware path.
uint32_t Crc32cPortable(const void* data, size_t n, uint32_t crc = 0);

/// The snappy framing format's masked CRC: rotate right by 15 and add a constant.
inline uint32_t MaskCrc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

/// Which implementation the CPU gets: "pclmul" or "table" for CRC-32, "sse4.2" or "table" for
/// CRC-32C.
const char* Crc32Implementation();
const char* Crc32cImplementation();

}  // namespace edl::recordio

#endif  // EDL_RECORDIO_CRC32_H_
