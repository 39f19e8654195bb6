#include "chunk.h"

#include <string>

#include "crc32.h"
#include "gzip.h"
#include "snappy_frame.h"

namespace edl::recordio {

Status CheckPayloadCrc(const ChunkHeader& h, const uint8_t* payload) {
  const uint32_t got = Crc32(payload, h.compressed_size);
  if (got != h.crc) {
    return Status(ErrorCode::kChecksum,
                  "chunk checksum mismatch (stored " + std::to_string(h.crc) + ", computed " +
                      std::to_string(got) + ")",
                  -1, 0);
  }
  return Status::Ok();
}

Status DecompressPayload(uint32_t compressor, const uint8_t* payload, size_t n, ByteBuffer& out,
                         uint64_t max_out) {
  switch (compressor) {
    case static_cast<uint32_t>(Compressor::kSnappy):
      // Typical snappy ratios on record data are 2-4x; one reservation avoids most regrowth.
      if (!out.EnsureSpare(n * 2 < max_out ? n * 2 : static_cast<size_t>(max_out))) {
        return Status(ErrorCode::kTooLarge, "out of memory");
      }
      return SnappyFrameDecode(payload, n, out, max_out);
    case static_cast<uint32_t>(Compressor::kGzip):
      return GzipDecode(payload, n, out, max_out);
    case static_cast<uint32_t>(Compressor::kNone):
      if (n > max_out) return Status(ErrorCode::kTooLarge, "chunk exceeds the size limit");
      return out.Append(payload, n) ? Status::Ok() : Status(ErrorCode::kTooLarge, "out of memory");
    default:
      return Status(ErrorCode::kUnknownCompressor,
                    "unknown compressor " + std::to_string(compressor));
  }
}

Status SplitRecords(const uint8_t* data, size_t n, uint32_t expected, uint32_t skip, uint32_t take,
                    uint32_t base, uint32_t* bounds) {
  size_t pos = 0;
  uint32_t i = 0;
  const uint32_t emit_end = skip + take;
  // Three loops keep the hot one (emitting) free of range tests.
  for (; i < skip; ++i) {
    if (n - pos < kLengthPrefixSize) goto short_prefix;
    {
      const size_t len = LoadLE32(data + pos);
      pos += kLengthPrefixSize;
      if (len > n - pos) goto short_record;
      pos += len;
    }
  }
  for (; i < emit_end; ++i) {
    if (n - pos < kLengthPrefixSize) goto short_prefix;
    {
      const size_t len = LoadLE32(data + pos);
      pos += kLengthPrefixSize;
      if (len > n - pos) goto short_record;
      *bounds++ = base + static_cast<uint32_t>(pos);
      pos += len;
      *bounds++ = base + static_cast<uint32_t>(pos);
    }
  }
  for (; i < expected; ++i) {
    if (n - pos < kLengthPrefixSize) goto short_prefix;
    {
      const size_t len = LoadLE32(data + pos);
      pos += kLengthPrefixSize;
      if (len > n - pos) goto short_record;
      pos += len;
    }
  }
  if (pos != n) {
    return Status(ErrorCode::kBadCompression,
                  std::to_string(n - pos) + " stray bytes after the chunk's " +
                      std::to_string(expected) + " records",
                  -1, static_cast<int64_t>(pos));
  }
  return Status::Ok();
short_prefix:
  return Status(ErrorCode::kTruncated,
                "chunk payload ends inside the length of record " + std::to_string(i) + " of " +
                    std::to_string(expected),
                -1, static_cast<int64_t>(pos));
short_record:
  return Status(ErrorCode::kTruncated,
                "record " + std::to_string(i) + " of the chunk runs past the end of its payload",
                -1, static_cast<int64_t>(pos - kLengthPrefixSize));
}

Status DecodeChunk(const ChunkHeader& h, const uint8_t* payload, size_t payload_len,
                   ByteBuffer& out, ByteBuffer& bounds) {
  if (h.magic != kMagic) return Status(ErrorCode::kBadMagic, "bad chunk magic");
  if (!IsKnownCompressor(h.compressor)) {
    return Status(ErrorCode::kUnknownCompressor,
                  "unknown compressor " + std::to_string(h.compressor));
  }
  if (payload_len < h.compressed_size) {
    return Status(ErrorCode::kTruncated, "chunk payload is cut short", -1,
                  static_cast<int64_t>(payload_len));
  }
  Status s = CheckPayloadCrc(h, payload);
  if (!s.ok()) return s;
  const size_t base = out.size();
  if (base > kMaxDecodedBytes) return Status(ErrorCode::kTooLarge, "output exceeds 4 GiB");
  s = DecompressPayload(h.compressor, payload, h.compressed_size, out, kMaxDecodedBytes - base);
  if (!s.ok()) return s;
  const size_t n = out.size() - base;
  if (h.num_records > n / kLengthPrefixSize) {
    return Status(ErrorCode::kTruncated, "chunk claims " + std::to_string(h.num_records) +
                                             " records but holds only " + std::to_string(n) +
                                             " bytes");
  }
  const size_t first = bounds.size();
  if (!bounds.EnsureSpare(size_t{h.num_records} * 8)) {
    return Status(ErrorCode::kTooLarge, "out of memory");
  }
  s = SplitRecords(out.data() + base, n, h.num_records, 0, h.num_records,
                   static_cast<uint32_t>(base), reinterpret_cast<uint32_t*>(bounds.end()));
  if (!s.ok()) return s;
  bounds.SetSize(first + size_t{h.num_records} * 8);
  return Status::Ok();
}

Status EncodeChunk(Compressor c, const uint8_t* records, size_t n, uint32_t num_records,
                   GzipEncoder* gzip, ByteBuffer& out) {
  const size_t header_at = out.size();
  if (!out.EnsureSpare(kHeaderSize)) return Status(ErrorCode::kTooLarge, "out of memory");
  out.SetSize(header_at + kHeaderSize);
  bool ok = true;
  switch (c) {
    case Compressor::kNone:
      ok = out.Append(records, n);
      break;
    case Compressor::kSnappy:
      ok = SnappyFrameEncode(records, n, out);
      break;
    case Compressor::kGzip:
      ok = gzip != nullptr && gzip->Encode(records, n, out);
      break;
  }
  if (!ok) {
    out.SetSize(header_at);
    return Status(ErrorCode::kTooLarge, "out of memory while compressing a chunk");
  }
  const size_t payload = out.size() - header_at - kHeaderSize;
  if (payload > 0xFFFFFFFFu) {
    out.SetSize(header_at);
    return Status(ErrorCode::kTooLarge, "chunk payload exceeds 4 GiB");
  }
  ChunkHeader h;
  h.compressor = static_cast<uint32_t>(c);
  h.compressed_size = static_cast<uint32_t>(payload);
  h.num_records = num_records;
  h.crc = Crc32(out.data() + header_at + kHeaderSize, payload);
  SerializeHeader(h, out.data() + header_at);
  return Status::Ok();
}

}  // namespace edl::recordio
