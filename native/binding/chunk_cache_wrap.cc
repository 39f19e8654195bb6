#include "chunk_cache_wrap.h"

#include <utility>

#include "args.h"
#include "async_work.h"
#include "errors.h"
#include "read_result.h"
#include "reader_wrap.h"

namespace edl::binding {

using prefetch::ChunkCache;
using prefetch::DecodedChunk;
using recordio::ErrorCode;
using recordio::Status;

namespace {

// A view of one record: the Buffer keeps its decoded chunk alive (not a copy), even after the
// cache evicted it.
Napi::Value RecordView(Napi::Env env, std::shared_ptr<const DecodedChunk> chunk, uint64_t record) {
  uint32_t len = 0;
  const uint8_t* p = chunk->RecordData(record - chunk->first_record, &len);
  if (len == 0) return Napi::Buffer<uint8_t>::New(env, 0);
  auto* hold = new std::shared_ptr<const DecodedChunk>(std::move(chunk));
  return Napi::Buffer<uint8_t>::New(
      env, const_cast<uint8_t*>(p), len,
      [](Napi::Env, uint8_t*, std::shared_ptr<const DecodedChunk>* h) { delete h; }, hold);
}

bool RecordArg(const Napi::CallbackInfo& info, uint64_t* record) {
  return info.Length() >= 1 && SafeCount(info[0], record);
}

class LoadJob {
 public:
  LoadJob(std::shared_ptr<ChunkCache> cache, uint64_t record, std::string path)
      : cache_(std::move(cache)), record_(record), path_(std::move(path)) {}
  void Run() {
    auto r = cache_->Get(record_);
    if (r.ok()) {
      chunk_ = std::move(r.value());
    } else {
      status_ = r.status();
    }
  }
  const Status& status() const { return status_; }
  const std::string& path() const { return path_; }
  Napi::Value Result(Napi::Env env) { return RecordView(env, std::move(chunk_), record_); }

 private:
  std::shared_ptr<ChunkCache> cache_;
  uint64_t record_;
  std::string path_;
  Status status_;
  std::shared_ptr<const DecodedChunk> chunk_;
};

// What openChunkCache hands to the wrapper's constructor.
struct CacheState {
  std::shared_ptr<ChunkCache> cache;
  std::string path;
};

Status Closed() { return Status(ErrorCode::kClosed, "reader is closed"); }

}  // namespace

Napi::Function ChunkCacheWrap::Init(Napi::Env env) {
  return DefineClass(env, "NativeChunkCache",
                     {
                         InstanceMethod<&ChunkCacheWrap::Lookup>("lookup"),
                         InstanceMethod<&ChunkCacheWrap::Load>("load"),
                         InstanceMethod<&ChunkCacheWrap::GetSync>("getSync"),
                         InstanceMethod<&ChunkCacheWrap::Stats>("stats"),
                         InstanceMethod<&ChunkCacheWrap::Close>("close"),
                     });
}

Napi::Value ChunkCacheWrap::Open(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* data = env.GetInstanceData<AddonData>();
  uint64_t capacity = 0;
  if (info.Length() < 2 || !info[0].IsObject() || !SafeCount(info[1], &capacity) ||
      !info[0].As<Napi::Object>().InstanceOf(data->reader_constructor.Value())) {
    return ThrowTypeError(env, "(reader: NativeReader, capacityBytes: number)", "openChunkCache");
  }
  ReaderWrap* reader = ReaderWrap::Unwrap(info[0].As<Napi::Object>());
  std::shared_ptr<const ReaderCore> core = reader == nullptr ? nullptr : reader->core();
  if (!core) return ThrowStatus(env, Closed(), "");
  // The cache shares the reader's file and index (aliasing pointers keep the core alive).
  auto cache = std::make_shared<ChunkCache>(
      std::shared_ptr<const recordio::RandomAccessFile>(core, core->file.get()),
      std::shared_ptr<const recordio::FileIndex>(core, &core->index), capacity);
  return NewWrapped(env, data->chunk_cache_constructor, CacheState{cache, core->path});
}

ChunkCacheWrap::ChunkCacheWrap(const Napi::CallbackInfo& info)
    : Napi::ObjectWrap<ChunkCacheWrap>(info) {
  CacheState state;
  if (!TakeHandoff(info, "openChunkCache() to be used", "NativeChunkCache", &state)) return;
  cache_ = std::move(state.cache);
  path_ = std::move(state.path);
  registry_ = info.Env().GetInstanceData<AddonData>()->registry;
  registry_->open.insert(this);
}

ChunkCacheWrap::~ChunkCacheWrap() {
  if (registry_) registry_->open.erase(this);
}

Napi::Value ChunkCacheWrap::Lookup(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint64_t record = 0;
  if (!RecordArg(info, &record)) return ThrowTypeError(env, "a record index", "lookup");
  if (!cache_) return ThrowStatus(env, Closed(), path_);
  auto chunk = cache_->Lookup(record);
  if (!chunk) return env.Undefined();
  return RecordView(env, std::move(chunk), record);
}

Napi::Value ChunkCacheWrap::Load(const Napi::CallbackInfo& info) { return StartGet(info, true); }

Napi::Value ChunkCacheWrap::GetSync(const Napi::CallbackInfo& info) {
  return StartGet(info, false);
}

Napi::Value ChunkCacheWrap::StartGet(const Napi::CallbackInfo& info, bool async) {
  Napi::Env env = info.Env();
  uint64_t record = 0;
  if (!RecordArg(info, &record)) {
    return ThrowTypeError(env, "a record index", async ? "load" : "getSync");
  }
  if (!cache_) {
    return async ? Napi::Value(RejectedPromise(env, Closed(), path_))
                 : ThrowStatus(env, Closed(), path_);
  }
  return StartJob<LoadJob>(env, async, "edl.recordio.chunkCache.load", cache_, record, path_);
}

Napi::Value ChunkCacheWrap::Stats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  prefetch::ChunkCacheStats s;
  if (cache_) s = cache_->Stats();
  return Counters(env, {{"hits", s.hits},
                        {"misses", s.misses},
                        {"decodes", s.decodes},
                        {"evictions", s.evictions},
                        {"bytes", s.bytes},
                        {"chunks", s.chunks}});
}

Napi::Value ChunkCacheWrap::Close(const Napi::CallbackInfo& info) {
  // Loads in flight hold their own reference; records handed out keep their chunks.
  cache_.reset();
  return info.Env().Undefined();
}

}  // namespace edl::binding
