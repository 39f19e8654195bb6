#include "chunk_cache.h"

#include <algorithm>
#include <string>
#include <utility>

namespace edl::prefetch {

using recordio::ChunkInfo;
using recordio::ErrorCode;
using recordio::Result;
using recordio::Status;

size_t ChunkCache::ChunkOf(uint64_t record) const {
  const auto& chunks = index_->chunks;
  return static_cast<size_t>(std::partition_point(chunks.begin(), chunks.end(),
                                                  [record](const ChunkInfo& c) {
                                                    return c.first_record + c.header.num_records <=
                                                           record;
                                                  }) -
                             chunks.begin());
}

std::shared_ptr<const DecodedChunk> ChunkCache::FindLocked(size_t chunk) {
  auto it = by_chunk_.find(chunk);
  if (it == by_chunk_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return *it->second;
}

void ChunkCache::InsertLocked(std::shared_ptr<const DecodedChunk> decoded) {
  stats_.bytes += decoded->out.data.size() + decoded->out.bounds.size();
  lru_.push_front(decoded);
  by_chunk_[decoded->chunk] = lru_.begin();
  while (stats_.bytes > capacity_ && lru_.size() > 1) {
    const auto& victim = lru_.back();
    stats_.bytes -= victim->out.data.size() + victim->out.bounds.size();
    by_chunk_.erase(victim->chunk);
    lru_.pop_back();
    ++stats_.evictions;
  }
  stats_.chunks = lru_.size();
}

std::shared_ptr<const DecodedChunk> ChunkCache::Lookup(uint64_t record) {
  if (record >= index_->num_records) return nullptr;
  const size_t chunk = ChunkOf(record);
  std::lock_guard<std::mutex> lock(mu_);
  auto found = FindLocked(chunk);
  if (found) ++stats_.hits;
  return found;
}

Result<std::shared_ptr<const DecodedChunk>> ChunkCache::Get(uint64_t record) {
  if (record >= index_->num_records) {
    return Status(ErrorCode::kOutOfRange, "record " + std::to_string(record) + " is outside [0, " +
                                              std::to_string(index_->num_records) + ")");
  }
  const size_t chunk = ChunkOf(record);
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    auto found = FindLocked(chunk);
    if (found) {
      ++stats_.hits;
      return found;
    }
    if (loading_.count(chunk) == 0) break;
    // Another thread decodes it: wait for that decode rather than doing it twice.
    loaded_.wait(lock);
  }
  ++stats_.misses;
  loading_.insert(chunk);
  lock.unlock();
  auto decoded = std::make_shared<DecodedChunk>();
  const ChunkInfo& info = index_->chunks[chunk];
  decoded->chunk = chunk;
  decoded->first_record = info.first_record;
  Status s = recordio::ReadRecords(*file_, *index_, info.first_record, info.header.num_records,
                                   false, &decoded->out);
  if (s.ok() && decoded->out.has_error && decoded->out.error.records > 0) {
    s = decoded->out.error.status;
  }
  lock.lock();
  loading_.erase(chunk);
  loaded_.notify_all();
  if (!s.ok()) return s;
  ++stats_.decodes;
  std::shared_ptr<const DecodedChunk> result = std::move(decoded);
  InsertLocked(result);
  return result;
}

ChunkCacheStats ChunkCache::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void ChunkCache::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  lru_.clear();
  by_chunk_.clear();
  stats_.bytes = 0;
  stats_.chunks = 0;
}

}  // namespace edl::prefetch
