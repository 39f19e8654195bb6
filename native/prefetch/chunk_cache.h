// A cache of decoded chunks bounded in bytes, for random access to the records of one file.
#ifndef EDL_PREFETCH_CHUNK_CACHE_H_
#define EDL_PREFETCH_CHUNK_CACHE_H_

#include <condition_variable>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "file.h"
#include "index.h"
#include "reader.h"
#include "status.h"

namespace edl::prefetch {

/// The decoded records of one whole chunk.
struct DecodedChunk {
  size_t chunk = 0;
  uint64_t first_record = 0;
  recordio::ReadOutput out;
  /// Bytes of record `i` (0-based in the chunk): [begin, end) into out.data.
  const uint8_t* RecordData(uint64_t i, uint32_t* len) const {
    const auto* b = reinterpret_cast<const uint32_t*>(out.bounds.data());
    *len = b[2 * i + 1] - b[2 * i];
    return out.data.data() + b[2 * i];
  }
};

struct ChunkCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t decodes = 0;
  uint64_t evictions = 0;
  uint64_t bytes = 0;
  uint64_t chunks = 0;
};

/// Keeps the most recently used decoded chunks of a file while their bytes stay within
/// `capacity_bytes` (at least the last one used is kept, whatever its size). Concurrent gets of one
/// chunk share one decode. Thread-safe. A chunk evicted while its records are still referenced
/// stays alive through those references only.
class ChunkCache {
 public:
  ChunkCache(std::shared_ptr<const recordio::RandomAccessFile> file,
             std::shared_ptr<const recordio::FileIndex> index, uint64_t capacity_bytes)
      : file_(std::move(file)), index_(std::move(index)), capacity_(capacity_bytes) {}

  /// The chunk holding `record`, decoded now if it is not cached. OUT_OF_RANGE for a record
  /// outside the file; the chunk's fault (CHECKSUM, TRUNCATED, ...) when it cannot be decoded
  /// (failures are not cached).
  recordio::Result<std::shared_ptr<const DecodedChunk>> Get(uint64_t record);
  /// The chunk holding `record` if it is cached, else null; never decodes.
  std::shared_ptr<const DecodedChunk> Lookup(uint64_t record);

  ChunkCacheStats Stats() const;
  uint64_t num_records() const { return index_->num_records; }
  /// Drops every cached chunk.
  void Clear();

 private:
  using Lru = std::list<std::shared_ptr<const DecodedChunk>>;
  size_t ChunkOf(uint64_t record) const;
  std::shared_ptr<const DecodedChunk> FindLocked(size_t chunk);
  void InsertLocked(std::shared_ptr<const DecodedChunk> decoded);

  const std::shared_ptr<const recordio::RandomAccessFile> file_;
  const std::shared_ptr<const recordio::FileIndex> index_;
  const uint64_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable loaded_;
  Lru lru_;  // most recently used first
  std::unordered_map<size_t, Lru::iterator> by_chunk_;
  std::unordered_set<size_t> loading_;
  ChunkCacheStats stats_;
};

}  // namespace edl::prefetch

#endif  // EDL_PREFETCH_CHUNK_CACHE_H_
