// Reads any record range of an indexed RecordIO file into one buffer plus [begin, end) bounds.
#ifndef EDL_RECORDIO_READER_H_
#define EDL_RECORDIO_READER_H_

#include <cstdint>
#include <vector>

#include "byte_buffer.h"
#include "file.h"
#include "index.h"
#include "status.h"

namespace edl::recordio {

/// A chunk that could not be delivered: why, and how many requested records it held.
struct ChunkFault {
  Status status;
  uint64_t records = 0;
};

struct ReadOutput {
  /// Decoded payloads of the chunks delivered, back to back (length prefixes included).
  ByteBuffer data;
  /// uint32 pairs [begin, end) into `data`, one per delivered record.
  ByteBuffer bounds;
  uint64_t first_record = 0;
  uint64_t delivered = 0;
  /// skip_corrupt: the chunks passed over.
  std::vector<ChunkFault> skipped;
  /// Without skip_corrupt (or for a fault no skip can get past: IO, TOO_LARGE): what stopped the
  /// read; every requested record before it is delivered.
  bool has_error = false;
  ChunkFault error;
};

/// Reads records [start, start + count). Returns OUT_OF_RANGE for a bad range; every other fault
/// goes into `out` (see ReadOutput). Safe to call concurrently on the same file and index.
/// `max_bytes` bounds the decoded bytes of the batch (at most kMaxDecodedBytes): a chunk that
/// would take it past the limit is TOO_LARGE, which stops the read in both modes.
Status ReadRecords(const RandomAccessFile& file, const FileIndex& index, uint64_t start,
                   uint64_t count, bool skip_corrupt, ReadOutput* out,
                   uint64_t max_bytes = kMaxDecodedBytes);

}  // namespace edl::recordio

#endif  // EDL_RECORDIO_READER_H_
