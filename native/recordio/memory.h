// Large-buffer allocation for decoded batches: huge pages and recycling instead of page faults.
#ifndef EDL_RECORDIO_MEMORY_H_
#define EDL_RECORDIO_MEMORY_H_

#include <cstddef>

namespace edl::recordio {

/// Blocks of at least this size are mmap'ed (2 MiB aligned, transparent huge pages requested)
/// and recycled through a small pool; smaller ones (and all of them under AddressSanitizer) come
/// from malloc.
inline constexpr size_t kLargeBlock = size_t{1} << 20;

/// Allocates at least `n` bytes; `*cap` receives the usable size. nullptr when out of memory.
void* AllocateBlock(size_t n, size_t* cap);

/// Grows block `p` (capacity `old_cap`, first `used` bytes live) to at least `n` bytes.
/// On failure returns nullptr and leaves `p` untouched.
void* ReallocateBlock(void* p, size_t old_cap, size_t used, size_t n, size_t* cap);

/// Frees (or recycles) a block of capacity `cap`. Thread-safe, like the two above.
void FreeBlock(void* p, size_t cap);

/// Bytes currently held by the recycling pool (for tests).
size_t PooledBytes();

}  // namespace edl::recordio

#endif  // EDL_RECORDIO_MEMORY_H_
