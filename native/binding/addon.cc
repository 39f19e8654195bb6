// Registers the exports of edl_native.node (docs/native-binding.md).
#include <memory>
#include <vector>

#include "addon_data.h"
#include "chunk_cache_wrap.h"
#include "crc32.h"
#include "memory_decode.h"
#include "napi.h"
#include "prefetcher_wrap.h"
#include "reader_wrap.h"
#include "tfrecord_binding.h"
#include "writer_wrap.h"

#ifndef EDL_VERSION
#define EDL_VERSION "0.0.0"
#endif

namespace edl::binding {

namespace {

// Runs when the environment (main thread or worker) goes away: flushes writers and closes files
// that JavaScript left open.
void CleanupHook(void* arg) {
  std::unique_ptr<std::shared_ptr<Registry>> registry(static_cast<std::shared_ptr<Registry>*>(arg));
  std::vector<Closable*> open((*registry)->open.begin(), (*registry)->open.end());
  for (Closable* c : open) c->CloseForTeardown();
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  auto* data = new AddonData();
  data->reader_constructor = Napi::Persistent(ReaderWrap::Init(env));
  data->writer_constructor = Napi::Persistent(WriterWrap::Init(env));
  data->prefetcher_constructor = Napi::Persistent(PrefetcherWrap::Init(env));
  data->chunk_cache_constructor = Napi::Persistent(ChunkCacheWrap::Init(env));
  env.SetInstanceData<AddonData>(data);
  napi_add_env_cleanup_hook(env, CleanupHook, new std::shared_ptr<Registry>(data->registry));

  exports.Set("napiVersion", Napi::Number::New(env, NAPI_VERSION));
  exports.Set("version", Napi::String::New(env, EDL_VERSION));
  Napi::Object features = Napi::Object::New(env);
  features.Set("crc32", Napi::String::New(env, recordio::Crc32Implementation()));
  features.Set("crc32c", Napi::String::New(env, recordio::Crc32cImplementation()));
  exports.Set("features", features);
  exports.Set("openReader", Napi::Function::New<ReaderWrap::Open>(env, "openReader"));
  exports.Set("createWriter", Napi::Function::New<WriterWrap::Create>(env, "createWriter"));
  exports.Set("createPrefetcher",
              Napi::Function::New<PrefetcherWrap::Create>(env, "createPrefetcher"));
  exports.Set("openChunkCache", Napi::Function::New<ChunkCacheWrap::Open>(env, "openChunkCache"));
  exports.Set("tfrecordScan", Napi::Function::New<TFRecordScan>(env, "tfrecordScan"));
  exports.Set("tfrecordDecode", Napi::Function::New<TFRecordDecode>(env, "tfrecordDecode"));
  exports.Set("tfrecordEncode", Napi::Function::New<TFRecordEncode>(env, "tfrecordEncode"));
  exports.Set("tfrecordDetect", Napi::Function::New<TFRecordDetect>(env, "tfrecordDetect"));
  exports.Set("recordioDecodeRange",
              Napi::Function::New<RecordIODecodeRange<true>>(env, "recordioDecodeRange"));
  exports.Set("recordioDecodeRangeSync",
              Napi::Function::New<RecordIODecodeRange<false>>(env, "recordioDecodeRangeSync"));
  exports.Set("tfrecordDecodeRange",
              Napi::Function::New<TFRecordDecodeRange<true>>(env, "tfrecordDecodeRange"));
  exports.Set("tfrecordDecodeRangeSync",
              Napi::Function::New<TFRecordDecodeRange<false>>(env, "tfrecordDecodeRangeSync"));
  return exports;
}

}  // namespace

}  // namespace edl::binding

static Napi::Object InitEdlNative(Napi::Env env, Napi::Object exports) {
  return edl::binding::Init(env, exports);
}

NODE_API_MODULE(edl_native, InitEdlNative)
