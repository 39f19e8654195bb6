// A bounded LRU of opened, indexed RecordIO files, shared by the prefetcher's threads.
#ifndef EDL_PREFETCH_FILE_CACHE_H_
#define EDL_PREFETCH_FILE_CACHE_H_

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "file.h"
#include "index.h"
#include "status.h"

namespace edl::prefetch {

/// A file and its chunk index; immutable once built, so readers on any thread share it.
struct OpenFile {
  std::string path;
  std::shared_ptr<const recordio::RandomAccessFile> file;
  recordio::FileIndex index;
};

/// Opens files once and keeps the `capacity` most recently used ones (their descriptors and
/// indexes). An evicted file stays open while a reader still holds it. Thread-safe.
class FileCache {
 public:
  explicit FileCache(size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  /// The opened, indexed file. IO for open/scan failures; a file with no readable chunk at all
  /// gives its tail fault (like openReader). Opening runs outside the lock.
  recordio::Result<std::shared_ptr<const OpenFile>> Get(const std::string& path);

  /// Files currently held.
  size_t size() const;
  /// Files opened so far (cache misses).
  size_t opens() const;

 private:
  using Lru = std::list<std::pair<std::string, std::shared_ptr<const OpenFile>>>;
  const size_t capacity_;
  mutable std::mutex mu_;
  Lru lru_;  // most recently used first
  std::unordered_map<std::string, Lru::iterator> by_path_;
  size_t opens_ = 0;
};

}  // namespace edl::prefetch

#endif  // EDL_PREFETCH_FILE_CACHE_H_
