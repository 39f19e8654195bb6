// Large anonymous memory blocks straight from the operating system, for the batch buffers of
// recordio/memory.cc: mmap with huge pages (posix_pages.cc) or VirtualAlloc (win32_pages.cc).
#ifndef EDL_PLATFORM_PAGES_H_
#define EDL_PLATFORM_PAGES_H_

#include <cstddef>

namespace edl::platform {

/// Granularity of MapPages sizes: a 2 MiB huge page.
inline constexpr size_t kHugePage = size_t{2} << 20;

/// `n` rounded up to a multiple of kHugePage.
inline constexpr size_t RoundUpToHugePage(size_t n) {
  return (n + kHugePage - 1) / kHugePage * kHugePage;
}

/// `bytes` (a multiple of kHugePage) of zeroed read-write memory; on Linux 2 MiB aligned with
/// transparent huge pages requested. nullptr when out of memory.
void* MapPages(size_t bytes);

/// Grows block `p` of `old_bytes` (its first `used` bytes live) to `new_bytes`, moving it if it
/// must. nullptr on failure, leaving `p` untouched.
void* RemapPages(void* p, size_t old_bytes, size_t used, size_t new_bytes);

/// Returns a MapPages block of `bytes` to the system.
void UnmapPages(void* p, size_t bytes);

}  // namespace edl::platform

#endif  // EDL_PLATFORM_PAGES_H_
