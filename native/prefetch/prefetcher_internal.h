// The prefetcher's private state, shared by its source files (prefetcher.cc: threads, planning
// and decoding; prefetcher_assemble.cc: batches; prefetcher_carry.cc: the chunk carried from one
// range to the next). Not part of the interface.
#ifndef EDL_PREFETCH_PREFETCHER_INTERNAL_H_
#define EDL_PREFETCH_PREFETCHER_INTERNAL_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "index.h"
#include "prefetcher.h"

namespace edl::prefetch {

// Index of the first chunk holding a record >= `record` (chunks without records before it hold
// nothing requested).
inline size_t FirstChunk(const recordio::FileIndex& index, uint64_t record) {
  return static_cast<size_t>(std::partition_point(index.chunks.begin(), index.chunks.end(),
                                                  [record](const recordio::ChunkInfo& c) {
                                                    return c.first_record + c.header.num_records <=
                                                           record;
                                                  }) -
                             index.chunks.begin());
}

// Where a range that ended at record `end` (exclusive, > 0) cut a chunk: that chunk's index, and
// whether the cut is inside it (records of the chunk remain after `end`).
inline bool CutChunk(const recordio::FileIndex& index, uint64_t end, size_t* chunk) {
  if (end == 0) return false;
  const size_t c = FirstChunk(index, end - 1);
  if (c >= index.chunks.size()) return false;
  const recordio::ChunkInfo& info = index.chunks[c];
  *chunk = c;
  return end < info.first_record + info.header.num_records;
}

inline uint64_t NanosSince(std::chrono::steady_clock::time_point start) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count());
}

struct Prefetcher::RangeState {
  uint64_t id = 0;
  Range range;
  std::shared_ptr<const OpenFile> file;
  bool opened = false;
  recordio::Status open_error;
  uint64_t next = 0;    // next record to plan
  bool failed = false;  // an error item ended it: its remaining pieces are dropped
};

struct Prefetcher::Piece {
  enum class State : uint8_t { kWaiting, kDecoding, kDone };
  std::shared_ptr<RangeState> range;
  uint64_t start = 0;
  uint64_t count = 0;
  bool last = false;  // last piece of its range
  State state = State::kWaiting;
  uint64_t estimate = 0;
  uint64_t accounted = 0;
  recordio::Status error;  // a fault before any decoding (open, range outside the file, memory)
  recordio::ReadOutput out;
  // File indices of the delivered records: consecutive runs (first, count).
  std::vector<std::pair<uint64_t, uint64_t>> segments;
  // Assembly cursor.
  uint64_t next_record = 0;  // index into out's records
  size_t seg = 0;
  uint64_t seg_pos = 0;
  bool faults_taken = false;
  // Planned to take its records from the carried chunk `carry_chunk` (records from `carry_first`
  // on) instead of decoding it again; `carry_resolved` once Assemble filled it either way.
  bool from_carry = false;
  bool carry_resolved = false;
  size_t carry_chunk = 0;
  uint64_t carry_first = 0;
};

// The decoded chunk a range ended inside, kept for the next range. `data` is the whole decoded
// piece (moving it copies nothing); the chunk's records after the cut start at `tail_begin`.
struct Prefetcher::Carry {
  std::shared_ptr<const OpenFile> file;
  size_t chunk = 0;
  uint64_t first = 0;  // file index of the first record after the cut
  uint64_t end = 0;    // file index one past the chunk's last record
  recordio::ByteBuffer data;
  uint32_t tail_begin = 0;
  uint64_t accounted = 0;
  bool claimed = false;  // a planned piece will take it
};

}  // namespace edl::prefetch

#endif  // EDL_PREFETCH_PREFETCHER_INTERNAL_H_
