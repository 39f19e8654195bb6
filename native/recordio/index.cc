#include "index.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace edl::recordio {

Status ScanIndex(const RandomAccessFile& file, FileIndex* index) {
  index->chunks.clear();
  index->num_records = 0;
  index->tail = Status::Ok();
  index->truncated_chunk = Status::Ok();
  const uint64_t size = file.Size();
  index->file_size = size;
  uint64_t offset = 0;
  while (offset < size) {
    const auto chunk = static_cast<int64_t>(index->chunks.size());
    if (size - offset < kHeaderSize) {
      index->tail = Status(ErrorCode::kTruncated,
                           "file ends inside a chunk header (" + std::to_string(size - offset) +
                               " of " + std::to_string(kHeaderSize) + " bytes)",
                           chunk, static_cast<int64_t>(offset));
      break;
    }
    uint8_t raw[kHeaderSize];
    size_t got = 0;
    Status s = file.ReadAt(offset, raw, kHeaderSize, &got);
    if (!s.ok()) return s.At(chunk, static_cast<int64_t>(offset));
    if (got < kHeaderSize) {  // the file shrank since it was opened
      index->tail = Status(ErrorCode::kTruncated, "file ends inside a chunk header", chunk,
                           static_cast<int64_t>(offset));
      break;
    }
    ChunkInfo info;
    info.offset = offset;
    info.first_record = index->num_records;
    info.header = ParseHeader(raw);
    if (info.header.magic != kMagic) {
      index->tail = Status(
          ErrorCode::kBadMagic,
          "bad chunk magic 0x" +
              [](uint32_t v) {
                char buf[16];
                std::snprintf(buf, sizeof buf, "%08x", v);
                return std::string(buf);
              }(info.header.magic),
          chunk, static_cast<int64_t>(offset));
      break;
    }
    index->chunks.push_back(info);
    index->num_records += info.header.num_records;
    const uint64_t present = size - offset - kHeaderSize;
    if (info.header.compressed_size > present) {
      // The header's extent is checked against the file here, once, so that every reader of the
      // index (not only a decoding read) learns that the file ends inside this chunk.
      index->truncated_chunk =
          Status(ErrorCode::kTruncated,
                 "chunk payload runs past the end of the file (" + std::to_string(present) +
                     " of " + std::to_string(info.header.compressed_size) + " bytes present)",
                 chunk, static_cast<int64_t>(offset));
      break;
    }
    offset += kHeaderSize + uint64_t{info.header.compressed_size};
  }
  return Status::Ok();
}

const Status& EndOfFileFault(const FileIndex& index) {
  return index.tail.ok() ? index.truncated_chunk : index.tail;
}

uint64_t DecodedEstimate(const ChunkInfo& chunk, uint64_t file_size) {
  const uint64_t payload_at = chunk.offset + kHeaderSize;
  const uint64_t in_file = file_size > payload_at ? file_size - payload_at : 0;
  const uint64_t stored = std::min<uint64_t>(chunk.header.compressed_size, in_file);
  switch (chunk.header.compressor) {
    case 0:
      return stored;
    case 1:
      return stored * 2;
    default:
      return stored * 4;
  }
}

}  // namespace edl::recordio
