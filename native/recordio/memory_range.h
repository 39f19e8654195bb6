// Decoding a byte range of a RecordIO file that is already in memory (e.g. fetched from object
// storage with ranged GETs): the same index scan and chunk reads as a file on disk, over a
// MemoryFile, so faults are the ones a file read reports.
#ifndef EDL_RECORDIO_MEMORY_RANGE_H_
#define EDL_RECORDIO_MEMORY_RANGE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "index.h"
#include "reader.h"
#include "status.h"

namespace edl::recordio {

/// What to decode from a buffer that starts at a chunk header.
struct MemoryRangeSpec {
  /// Where the buffer lies in its file: the byte offset of its first byte, the index of its first
  /// chunk and of that chunk's first record. Faults and ReadOutput::first_record are given in the
  /// file's terms through them.
  uint64_t base_offset = 0;
  uint64_t first_chunk = 0;
  uint64_t first_record = 0;
  /// The chunks the caller's index lists for the range (file offsets and file record indices,
  /// ChunkHeader::crc unused), or null to take the chunk headers found in the buffer as they are.
  /// When given, the buffer must hold exactly these chunks: a header that disagrees is BAD_MAGIC
  /// (the bytes are not what the index describes), and a buffer that ends before the last chunk is
  /// TRUNCATED, reported like a file cut short there.
  const std::vector<ChunkInfo>* expected = nullptr;
  /// Records to decode, counted from the first record of the buffer: [skip, skip + count).
  /// kAllRecords: to the last record the buffer (or `expected`) holds.
  uint64_t skip = 0;
  uint64_t count = kAllRecords;
  bool skip_corrupt = false;
  /// Bound on the decoded bytes (at most kMaxDecodedBytes); beyond it the read is TOO_LARGE.
  uint64_t max_bytes = kMaxDecodedBytes;

  static constexpr uint64_t kAllRecords = ~uint64_t{0};
};

/// Decodes the records `spec` asks for from `data[0, n)` into `out`, as ReadRecords does for a
/// file: records before a fault are delivered, faults go into `out` (stop or skip mode), and a
/// fault at the end of the buffer (a damaged last header, a cut payload) is reported by a read
/// that reaches it. Returns OUT_OF_RANGE when the records asked for are not in the range, and
/// BAD_MAGIC when `spec.expected` does not describe the buffer's chunks. Never reads outside
/// `data[0, n)`; `data` is only read.
Status DecodeMemoryRange(const uint8_t* data, size_t n, const MemoryRangeSpec& spec,
                         ReadOutput* out);

}  // namespace edl::recordio

#endif  // EDL_RECORDIO_MEMORY_RANGE_H_
