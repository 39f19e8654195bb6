#include "file_cache.h"

namespace edl::prefetch {

using recordio::Result;
using recordio::Status;

Result<std::shared_ptr<const OpenFile>> FileCache::Get(const std::string& path) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_path_.find(path);
    if (it != by_path_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second;
    }
  }
  auto opened = std::make_shared<OpenFile>();
  opened->path = path;
  auto file = recordio::LocalFile::Open(path);
  if (!file.ok()) return file.status();
  opened->file = file.value();
  Status s = recordio::ScanIndex(*opened->file, &opened->index);
  if (!s.ok()) return s;
  if (opened->index.chunks.empty() && !opened->index.tail.ok()) return opened->index.tail;
  std::shared_ptr<const OpenFile> result = std::move(opened);
  std::lock_guard<std::mutex> lock(mu_);
  ++opens_;
  auto it = by_path_.find(path);
  if (it != by_path_.end()) {
    // Another thread opened it meanwhile: keep one copy.
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->second;
  }
  lru_.emplace_front(path, result);
  by_path_[path] = lru_.begin();
  while (lru_.size() > capacity_) {
    by_path_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return result;
}

size_t FileCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.size();
}

size_t FileCache::opens() const {
  std::lock_guard<std::mutex> lock(mu_);
  return opens_;
}

}  // namespace edl::prefetch
