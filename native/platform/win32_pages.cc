// VirtualAlloc for the large batch buffers (the mingw-w64 win32-x64 build). Windows cannot release
// part of a reservation, so blocks are not trimmed to a 2 MiB boundary (large pages there need a
// privilege that normal users lack anyway) and growing one copies its live bytes.
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>

#include <cstring>

#include "pages.h"

namespace edl::platform {

void* MapPages(size_t bytes) {
  return VirtualAlloc(nullptr, bytes, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
}

void* RemapPages(void* p, size_t old_bytes, size_t used, size_t new_bytes) {
  void* q = MapPages(new_bytes);
  if (q == nullptr) return nullptr;
  std::memcpy(q, p, used < new_bytes ? used : new_bytes);
  UnmapPages(p, old_bytes);
  return q;
}

void UnmapPages(void* p, size_t bytes) {
  (void)bytes;  // MEM_RELEASE frees the whole reservation and takes no size
  VirtualFree(p, 0, MEM_RELEASE);
}

}  // namespace edl::platform
