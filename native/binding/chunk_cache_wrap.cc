#include "chunk_cache_wrap.h"

#include <utility>

#include "errors.h"
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
  if (info.Length() < 1 || !info[0].IsNumber()) return false;
  const double d = info[0].As<Napi::Number>().DoubleValue();
  if (!(d >= 0 && d <= 9007199254740991.0)) return false;
  *record = static_cast<uint64_t>(d);
  return true;
}

class LoadWorker : public Napi::AsyncWorker {
 public:
  LoadWorker(Napi::Env env, std::shared_ptr<ChunkCache> cache, uint64_t record, std::string path)
      : Napi::AsyncWorker(env, "edl.recordio.chunkCache.load"),
        cache_(std::move(cache)),
        record_(record),
        path_(std::move(path)),
        deferred_(Napi::Promise::Deferred::New(env)) {}
  Napi::Promise Promise() const { return deferred_.Promise(); }
  void Execute() override {
    auto r = cache_->Get(record_);
    if (r.ok()) {
      chunk_ = std::move(r.value());
    } else {
      status_ = r.status();
    }
  }
  void OnOK() override {
    Napi::Env env = Env();
    Napi::HandleScope scope(env);
    if (!status_.ok()) {
      deferred_.Reject(MakeError(env, status_, path_).Value());
      return;
    }
    deferred_.Resolve(RecordView(env, std::move(chunk_), record_));
  }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  std::shared_ptr<ChunkCache> cache_;
  uint64_t record_;
  std::string path_;
  Napi::Promise::Deferred deferred_;
  Status status_;
  std::shared_ptr<const DecodedChunk> chunk_;
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
  if (info.Length() < 2 || !info[0].IsObject() || !info[1].IsNumber() ||
      !info[0].As<Napi::Object>().InstanceOf(data->reader_constructor.Value())) {
    return ThrowTypeError(env, "(reader: NativeReader, capacityBytes: number)", "openChunkCache");
  }
  const double capacity = info[1].As<Napi::Number>().DoubleValue();
  if (!(capacity >= 0 && capacity <= 9007199254740991.0)) {
    return ThrowTypeError(env, "(reader: NativeReader, capacityBytes: number)", "openChunkCache");
  }
  ReaderWrap* reader = ReaderWrap::Unwrap(info[0].As<Napi::Object>());
  std::shared_ptr<const ReaderCore> core = reader == nullptr ? nullptr : reader->core();
  if (!core) return ThrowStatus(env, Closed(), "");
  // The cache shares the reader's file and index (aliasing pointers keep the core alive).
  auto cache = std::make_shared<ChunkCache>(
      std::shared_ptr<const recordio::RandomAccessFile>(core, core->file.get()),
      std::shared_ptr<const recordio::FileIndex>(core, &core->index),
      static_cast<uint64_t>(capacity));
  auto* handoff = new std::pair<std::shared_ptr<ChunkCache>, std::string>(cache, core->path);
  Napi::Object obj = data->chunk_cache_constructor.New({Napi::External<void>::New(env, handoff)});
  if (obj.IsEmpty()) {
    delete handoff;
    return env.Undefined();
  }
  return obj;
}

ChunkCacheWrap::ChunkCacheWrap(const Napi::CallbackInfo& info)
    : Napi::ObjectWrap<ChunkCacheWrap>(info) {
  Napi::Env env = info.Env();
  if (info.Length() != 1 || !info[0].IsExternal()) {
    ThrowTypeError(env, "openChunkCache() to be used", "NativeChunkCache");
    return;
  }
  auto* handoff = static_cast<std::pair<std::shared_ptr<ChunkCache>, std::string>*>(
      info[0].As<Napi::External<void>>().Data());
  cache_ = std::move(handoff->first);
  path_ = std::move(handoff->second);
  delete handoff;
  registry_ = env.GetInstanceData<AddonData>()->registry;
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

Napi::Value ChunkCacheWrap::Load(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint64_t record = 0;
  if (!RecordArg(info, &record)) return ThrowTypeError(env, "a record index", "load");
  if (!cache_) {
    auto d = Napi::Promise::Deferred::New(env);
    d.Reject(MakeError(env, Closed(), path_).Value());
    return d.Promise();
  }
  auto* worker = new LoadWorker(env, cache_, record, path_);
  Napi::Promise p = worker->Promise();
  worker->Queue();
  return p;
}

Napi::Value ChunkCacheWrap::GetSync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint64_t record = 0;
  if (!RecordArg(info, &record)) return ThrowTypeError(env, "a record index", "getSync");
  if (!cache_) return ThrowStatus(env, Closed(), path_);
  auto r = cache_->Get(record);
  if (!r.ok()) return ThrowStatus(env, r.status(), path_);
  return RecordView(env, std::move(r.value()), record);
}

Napi::Value ChunkCacheWrap::Stats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  prefetch::ChunkCacheStats s;
  if (cache_) s = cache_->Stats();
  Napi::Object o = Napi::Object::New(env);
  auto set = [&](const char* k, uint64_t v) {
    o.Set(k, Napi::Number::New(env, static_cast<double>(v)));
  };
  set("hits", s.hits);
  set("misses", s.misses);
  set("decodes", s.decodes);
  set("evictions", s.evictions);
  set("bytes", s.bytes);
  set("chunks", s.chunks);
  return o;
}

Napi::Value ChunkCacheWrap::Close(const Napi::CallbackInfo& info) {
  // Loads in flight hold their own reference; records handed out keep their chunks.
  cache_.reset();
  return info.Env().Undefined();
}

}  // namespace edl::binding
