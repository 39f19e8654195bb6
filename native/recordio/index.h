// The chunk index of a RecordIO file, built by reading chunk headers only.
#ifndef EDL_RECORDIO_INDEX_H_
#define EDL_RECORDIO_INDEX_H_

#include <cstdint>
#include <vector>

#include "file.h"
#include "format.h"
#include "status.h"

namespace edl::recordio {

struct ChunkInfo {
  uint64_t offset = 0;        // of the chunk header in the file
  uint64_t first_record = 0;  // index of the chunk's first record in the file
  ChunkHeader header;
};

struct FileIndex {
  std::vector<ChunkInfo> chunks;
  uint64_t num_records = 0;
  uint64_t file_size = 0;
  /// Not OK when the scan stopped at a header it could not use (BAD_MAGIC, or TRUNCATED for a
  /// partial header): the chunks before it are listed, and a read reaching the end of the file
  /// reports this fault so that nothing is lost silently. Its chunk is chunks.size().
  Status tail;
  /// Not OK (TRUNCATED, naming the chunk and its offset) when the last listed chunk's payload runs
  /// past the end of the file: the header promises more bytes than the file holds. Reading that
  /// chunk fails with TRUNCATED; an empty read at the end of the file reports this status, so that
  /// a header-only look at the file (edl recordio inspect) sees the cut too. At most one of `tail`
  /// and `truncated_chunk` is not OK.
  Status truncated_chunk;
};

/// The fault at the end of the file that a read ending there reports without decoding a payload:
/// `tail` when the scan stopped at a bad header, else `truncated_chunk`.
const Status& EndOfFileFault(const FileIndex& index);

/// Likely decoded size of a chunk, for reservations and byte budgets only: exact for stored
/// chunks, 2x for snappy and 4x for gzip. Sizes from the header are first clamped to what the file
/// holds, so a lying header cannot make a caller reserve memory.
uint64_t DecodedEstimate(const ChunkInfo& chunk, uint64_t file_size);

/// Scans the chunk headers of `file`: one positioned read of kHeaderSize bytes per chunk, never a
/// payload. A last chunk whose payload is cut short is still listed (reading it is TRUNCATED) and
/// named by `truncated_chunk`.
/// Returns a non-OK status only for I/O errors.
Status ScanIndex(const RandomAccessFile& file, FileIndex* index);

}  // namespace edl::recordio

#endif  // EDL_RECORDIO_INDEX_H_
