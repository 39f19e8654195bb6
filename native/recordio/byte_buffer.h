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
///
/// A buffer can also start on borrowed storage (Borrow(): memory someone else owns, e.g. a
/// JavaScript ArrayBuffer handed back for reuse). It is written in place while it fits; growing
/// past it moves the contents to owned storage and never frees or resizes the borrowed block.
class ByteBuffer {
 public:
  ByteBuffer() = default;
  ~ByteBuffer() { FreeOwned(); }
  ByteBuffer(const ByteBuffer&) = delete;
  ByteBuffer& operator=(const ByteBuffer&) = delete;
  ByteBuffer(ByteBuffer&& o) noexcept
      : data_(o.data_), size_(o.size_), capacity_(o.capacity_), borrowed_(o.borrowed_) {
    o.data_ = nullptr;
    o.size_ = o.capacity_ = 0;
    o.borrowed_ = false;
  }
  ByteBuffer& operator=(ByteBuffer&& o) noexcept {
    if (this != &o) {
      FreeOwned();
      data_ = o.data_;
      size_ = o.size_;
      capacity_ = o.capacity_;
      borrowed_ = o.borrowed_;
      o.data_ = nullptr;
      o.size_ = o.capacity_ = 0;
      o.borrowed_ = false;
    }
    return *this;
  }

  /// Starts over (size 0) on `cap` bytes at `p`, owned by the caller, who keeps them alive and
  /// untouched until this buffer lets go of them (Release(), growth past them, or destruction).
  void Borrow(uint8_t* p, size_t cap) {
    FreeOwned();
    data_ = p;
    size_ = 0;
    capacity_ = p != nullptr ? cap : 0;
    borrowed_ = p != nullptr;
  }

  /// Whether the storage is still the borrowed block (it was never outgrown).
  bool borrowed() const { return borrowed_; }

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
    void* p;
    if (borrowed_) {
      p = AllocateBlock(n, &cap);
      if (p == nullptr) return false;
      if (size_ > 0) std::memcpy(p, data_, size_);
      borrowed_ = false;
    } else {
      p = data_ == nullptr ? AllocateBlock(n, &cap)
                           : ReallocateBlock(data_, capacity_, size_, n, &cap);
      if (p == nullptr) return false;
    }
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

  /// Gives the storage away; the caller frees it with FreeBlock(p, capacity() before the call),
  /// unless it was borrowed() (then it goes back to its owner).
  uint8_t* Release() {
    uint8_t* p = data_;
    data_ = nullptr;
    size_ = capacity_ = 0;
    borrowed_ = false;
    return p;
  }

 private:
  void FreeOwned() {
    if (!borrowed_) FreeBlock(data_, capacity_);
  }

  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
  bool borrowed_ = false;
};

}  // namespace edl::recordio

#endif  // EDL_RECORDIO_BYTE_BUFFER_H_
