// One chunk: checksum, decompression into a caller-owned buffer, record splitting, encoding.
#ifndef EDL_RECORDIO_CHUNK_H_
#define EDL_RECORDIO_CHUNK_H_

#include <cstddef>
#include <cstdint>

#include "byte_buffer.h"
#include "format.h"
#include "status.h"

namespace edl::recordio {

/// Checks the header CRC of `payload` (the `h.compressed_size` bytes stored after the header).
/// The error's offset is relative to the payload start.
Status CheckPayloadCrc(const ChunkHeader& h, const uint8_t* payload);

/// Decompresses a snappy or gzip payload (already CRC-checked) and appends it to `out`, never
/// growing `out` past `max_out` bytes (TOO_LARGE). Offsets in errors are relative to the payload.
Status DecompressPayload(uint32_t compressor, const uint8_t* payload, size_t n, ByteBuffer& out,
                         uint64_t max_out);

/// Splits a decoded payload `data[0, n)` made of `expected` records framed as `u32 LE length +
/// bytes`. For records with index in [skip, skip + take) it writes two uint32 per record into
/// `bounds` (begin, end as `base` + offset in `data`); the other records are walked and checked
/// but not emitted. Every length is checked against the bytes left; bytes after the last record
/// are an error. `base + n` must fit in uint32. Offsets in errors are relative to `data`.
Status SplitRecords(const uint8_t* data, size_t n, uint32_t expected, uint32_t skip, uint32_t take,
                    uint32_t base, uint32_t* bounds);

/// Convenience for tests and fuzzers: CRC check, decode and split a whole chunk. Appends the
/// decoded payload to `out` and all its records' bounds (relative to out.data()) to `bounds`.
Status DecodeChunk(const ChunkHeader& h, const uint8_t* payload, size_t payload_len,
                   ByteBuffer& out, ByteBuffer& bounds);

class GzipEncoder;

/// Appends a complete chunk (header + payload) holding `num_records` records whose framed
/// uncompressed payload is `records[0, n)`. `gzip` is required for Compressor::kGzip.
/// TOO_LARGE when the payload does not fit the 32-bit size field.
Status EncodeChunk(Compressor c, const uint8_t* records, size_t n, uint32_t num_records,
                   GzipEncoder* gzip, ByteBuffer& out);

}  // namespace edl::recordio

#endif  // EDL_RECORDIO_CHUNK_H_
