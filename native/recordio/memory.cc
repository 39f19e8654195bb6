#include "memory.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "pages.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EDL_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define EDL_ASAN 1
#endif

namespace edl::recordio {

namespace {

#ifdef EDL_ASAN
// Exact-size malloc blocks let AddressSanitizer catch an overflow by a single byte; mapped,
// rounded-up blocks would hide it.
constexpr bool kUseMappedBlocks = false;
#else
constexpr bool kUseMappedBlocks = true;
#endif

using platform::kHugePage;
// Freed batches are kept for the next read: faulting fresh pages in costs more than reading the
// file from the page cache. The pool stays small so an idle process does not hoard memory.
constexpr size_t kPoolLimitBytes = size_t{256} << 20;
constexpr size_t kPoolLimitBlocks = 16;

struct Block {
  void* p;
  size_t cap;
};

struct Pool {
  std::mutex mu;
  std::vector<Block> blocks;
  size_t bytes = 0;
};

Pool& GetPool() {
  static Pool* pool = new Pool();  // never destroyed: finalizers may run during exit
  return *pool;
}

void* TakeFromPool(size_t n, size_t* cap) {
  Pool& pool = GetPool();
  std::lock_guard<std::mutex> lock(pool.mu);
  size_t best = pool.blocks.size();
  for (size_t i = 0; i < pool.blocks.size(); ++i) {
    const size_t c = pool.blocks[i].cap;
    // Big enough, and not so big that a small batch pins a huge block.
    if (c >= n && c <= n * 4 + (size_t{8} << 20) &&
        (best == pool.blocks.size() || c < pool.blocks[best].cap)) {
      best = i;
    }
  }
  if (best == pool.blocks.size()) return nullptr;
  Block b = pool.blocks[best];
  pool.blocks[best] = pool.blocks.back();
  pool.blocks.pop_back();
  pool.bytes -= b.cap;
  *cap = b.cap;
  return b.p;
}

}  // namespace

void* AllocateBlock(size_t n, size_t* cap) {
  if (n < kLargeBlock || !kUseMappedBlocks) {
    void* p = std::malloc(n == 0 ? 1 : n);
    *cap = p != nullptr ? n : 0;
    return p;
  }
  if (void* p = TakeFromPool(n, cap)) return p;
  const size_t c = platform::RoundUpToHugePage(n);
  void* p = platform::MapPages(c);
  *cap = p != nullptr ? c : 0;
  return p;
}

void* ReallocateBlock(void* p, size_t old_cap, size_t used, size_t n, size_t* cap) {
  if (!kUseMappedBlocks || (n < kLargeBlock && old_cap < kLargeBlock)) {
    void* q = std::realloc(p, n);
    if (q != nullptr) *cap = n;
    return q;
  }
  if (old_cap >= kLargeBlock) {
    const size_t c = platform::RoundUpToHugePage(n);
    void* q = platform::RemapPages(p, old_cap, used, c);
    if (q == nullptr) return nullptr;
    *cap = c;
    return q;
  }
  size_t c = 0;
  void* q = AllocateBlock(n, &c);
  if (q == nullptr) return nullptr;
  if (used > 0) std::memcpy(q, p, used);
  FreeBlock(p, old_cap);
  *cap = c;
  return q;
}

void FreeBlock(void* p, size_t cap) {
  if (p == nullptr) return;
  if (cap < kLargeBlock || !kUseMappedBlocks) {
    std::free(p);
    return;
  }
  {
    Pool& pool = GetPool();
    std::lock_guard<std::mutex> lock(pool.mu);
    if (pool.blocks.size() < kPoolLimitBlocks && pool.bytes + cap <= kPoolLimitBytes) {
      pool.blocks.push_back({p, cap});
      pool.bytes += cap;
      return;
    }
  }
  platform::UnmapPages(p, cap);
}

size_t PooledBytes() {
  Pool& pool = GetPool();
  std::lock_guard<std::mutex> lock(pool.mu);
  return pool.bytes;
}

}  // namespace edl::recordio
