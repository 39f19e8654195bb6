#include <sys/mman.h>

#include <cstdint>

#include "pages.h"

namespace edl::platform {

void* MapPages(size_t bytes) {
  // Over-map by one huge page and trim, so the block starts on a 2 MiB boundary.
  const size_t span = bytes + kHugePage;
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto base = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = RoundUpToHugePage(base);
  if (aligned > base) munmap(raw, aligned - base);
  const size_t tail = base + span - (aligned + bytes);
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + bytes), tail);
#ifdef MADV_HUGEPAGE
  madvise(reinterpret_cast<void*>(aligned), bytes, MADV_HUGEPAGE);
#endif
  return reinterpret_cast<void*>(aligned);
}

void* RemapPages(void* p, size_t old_bytes, size_t used, size_t new_bytes) {
  (void)used;  // the kernel moves every page
  void* q = mremap(p, old_bytes, new_bytes, MREMAP_MAYMOVE);
  return q == MAP_FAILED ? nullptr : q;
}

void UnmapPages(void* p, size_t bytes) { munmap(p, bytes); }

}  // namespace edl::platform
