// Growable byte buffer with uninitialised growth and hand-off of its malloc'ed storage.
#ifndef EDL_RECORDIO_BYTE_BUFFER_H_
#define EDL_RECORDIO_BYTE_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "memory.h"

namespace edl::recordio {

/// Like std::vector<uint8_t> but growing never zero-fills (decoders overwrite every byte), large
/// storage comes from the recycling allocator of memory.h, and Release() gives the storage away
/// (to be freed with FreeBlock(p, capacity)) so JavaScript can own it.
class ByteBuffer {
 public:
  ByteBuffer() = default;
  ~ByteBuffer() { FreeBlock(data_, capacity_); }
  ByteBuffer(const ByteBuffer&) = delete;
  ByteBuffer& operator=(const ByteBuffer&) = delete;
  ByteBuffer(ByteBuffer&& o) noexcept : data_(o.data_), size_(o.size_), capacity_(o.capacity_) {
    o.data_ = nullptr;
    o.size_ = o.capacity_ = 0;
  }
  ByteBuffer& operator=(ByteBuffer&& o) noexcept {
    if (this != &o) {
      FreeBlock(data_, capacity_);
      data_ = o.data_;
      size_ = o.size_;
      capacity_ = o.capacity_;
      o.data_ = nullptr;
      o.size_ = o.capacity_ = 0;
    }
    return *this;
  }

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  uint8_t* end() { return data_ + size_; }
  size_t spare() const { return capacity_ - size_; }

  /// Ensures capacity() >= n. Returns false when memory is exhausted.
  bool Reserve(size_t n) {
    if (n <= capacity_) return true;
    size_t cap = 0;
    void* p = data_ == nullptr ? AllocateBlock(n, &cap)
                               : ReallocateBlock(data_, capacity_, size_, n, &cap);
    if (p == nullptr) return false;
    data_ = static_cast<uint8_t*>(p);
    capacity_ = cap;
    return true;
  }

  /// Ensures at least `extra` bytes of spare room, growing geometrically.
  bool EnsureSpare(size_t extra) {
    if (capacity_ - size_ >= extra) return true;
    size_t want = size_ + extra;
    size_t grown = capacity_ + capacity_ / 2;
    return Reserve(grown > want ? grown : want);
  }

  /// Sets the size; n must not exceed capacity().
  void SetSize(size_t n) { size_ = n; }
  void Clear() { size_ = 0; }

  bool Append(const void* p, size_t n) {
    if (n == 0) return true;
    if (!EnsureSpare(n)) return false;
    std::memcpy(data_ + size_, p, n);
    size_ += n;
    return true;
  }

  /// Gives the storage away; the caller frees it with FreeBlock(p, capacity() before the call).
  uint8_t* Release() {
    uint8_t* p = data_;
    data_ = nullptr;
    size_ = capacity_ = 0;
    return p;
  }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace edl::recordio

#endif  // EDL_RECORDIO_BYTE_BUFFER_H_
