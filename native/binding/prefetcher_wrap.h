// NativePrefetcher: the native prefetch ring (native/prefetch) for JavaScript
// (docs/native-binding.md).
#ifndef EDL_BINDING_PREFETCHER_WRAP_H_
#define EDL_BINDING_PREFETCHER_WRAP_H_

#include <cstdint>
#include <memory>
#include <unordered_map>

#include "addon_data.h"
#include "napi.h"
#include "prefetcher.h"

namespace edl::binding {

struct BatchBlock;

/// The batch blocks delivered to JavaScript, by address (main thread only): how recycle() finds
/// the block behind an ArrayBuffer handed back. Shared with the buffers' finalizers, which may run
/// after the prefetcher is gone.
struct Delivered {
  struct Entry {
    std::weak_ptr<BatchBlock> block;
    uint64_t generation = 0;
  };
  std::unordered_map<const void*, Entry> blocks;
  uint64_t next_generation = 1;
  /// The ArrayBuffers of blocks that the prefetcher kept for reuse (by block address), with the
  /// generation of their registration: a batch assembled into such a block is delivered in the
  /// same ArrayBuffer. V8 counts every new ArrayBuffer's bytes towards its next full garbage
  /// collection, so a new one per delivery cost a mark-compact per 64 MiB delivered, on the
  /// consumer's thread. Strong references, dropped at delivery or when the prefetcher closes.
  struct Spare {
    Napi::Reference<Napi::ArrayBuffer> buffer;
    uint64_t generation = 0;
  };
  std::unordered_map<const void*, Spare> spares;
};

class PrefetcherWrap : public Napi::ObjectWrap<PrefetcherWrap>, public Closable {
 public:
  static Napi::Function Init(Napi::Env env);
  /// createPrefetcher(options, onReady): starts the threads; throws on failure.
  static Napi::Value Create(const Napi::CallbackInfo& info);

  explicit PrefetcherWrap(const Napi::CallbackInfo& info);
  ~PrefetcherWrap() override;
  void CloseForTeardown() override { Shutdown(); }

 private:
  Napi::Value Enqueue(const Napi::CallbackInfo& info);
  Napi::Value End(const Napi::CallbackInfo& info);
  Napi::Value TryPop(const Napi::CallbackInfo& info);
  Napi::Value Wait(const Napi::CallbackInfo& info);
  Napi::Value Pull(const Napi::CallbackInfo& info);
  Napi::Value Recycle(const Napi::CallbackInfo& info);
  Napi::Value Stats(const Napi::CallbackInfo& info);
  Napi::Value SetReadAhead(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);
  void Shutdown();
  void Unref(Napi::Env env);

  std::shared_ptr<prefetch::Prefetcher> core_;
  std::shared_ptr<Registry> registry_;
  std::shared_ptr<Delivered> delivered_ = std::make_shared<Delivered>();
  Napi::ThreadSafeFunction on_ready_;
  bool has_tsfn_ = false;
  bool refed_ = false;
};

}  // namespace edl::binding

#endif  // EDL_BINDING_PREFETCHER_WRAP_H_
