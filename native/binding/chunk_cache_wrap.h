// NativeChunkCache: decoded chunks of one opened reader, bounded in bytes, serving random access
// (docs/native-binding.md).
#ifndef EDL_BINDING_CHUNK_CACHE_WRAP_H_
#define EDL_BINDING_CHUNK_CACHE_WRAP_H_

#include <memory>
#include <string>

#include "addon_data.h"
#include "chunk_cache.h"
#include "napi.h"

namespace edl::binding {

class ChunkCacheWrap : public Napi::ObjectWrap<ChunkCacheWrap>, public Closable {
 public:
  static Napi::Function Init(Napi::Env env);
  /// openChunkCache(reader, capacityBytes).
  static Napi::Value Open(const Napi::CallbackInfo& info);

  explicit ChunkCacheWrap(const Napi::CallbackInfo& info);
  ~ChunkCacheWrap() override;
  void CloseForTeardown() override { cache_.reset(); }

 private:
  Napi::Value Lookup(const Napi::CallbackInfo& info);
  Napi::Value Load(const Napi::CallbackInfo& info);
  Napi::Value GetSync(const Napi::CallbackInfo& info);
  // load() on the libuv pool (async) or getSync() on the calling thread.
  Napi::Value StartGet(const Napi::CallbackInfo& info, bool async);
  Napi::Value Stats(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);

  std::shared_ptr<prefetch::ChunkCache> cache_;
  std::shared_ptr<Registry> registry_;
  std::string path_;
};

}  // namespace edl::binding

#endif  // EDL_BINDING_CHUNK_CACHE_WRAP_H_
