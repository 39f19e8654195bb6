#include "memory.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

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

constexpr size_t kHugePage = size_t{2} << 20;
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

size_t RoundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

void* MapLarge(size_t cap) {
  // Over-map by one huge page and trim, so the block starts on a 2 MiB boundary.
  const size_t span = cap + kHugePage;
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto base = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = RoundUp(base, kHugePage);
  if (aligned > base) munmap(raw, aligned - base);
  const size_t tail = base + span - (aligned + cap);
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + cap), tail);
#ifdef MADV_HUGEPAGE
  madvise(reinterpret_cast<void*>(aligned), cap, MADV_HUGEPAGE);
#endif
  return reinterpret_cast<void*>(aligned);
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
  const size_t c = RoundUp(n, kHugePage);
  void* p = MapLarge(c);
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
    const size_t c = RoundUp(n, kHugePage);
    void* q = mremap(p, old_cap, c, MREMAP_MAYMOVE);
    if (q == MAP_FAILED) return nullptr;
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
  munmap(p, cap);
}

size_t PooledBytes() {
  Pool& pool = GetPool();
  std::lock_guard<std::mutex> lock(pool.mu);
  return pool.bytes;
}

}  // namespace edl::recordio
