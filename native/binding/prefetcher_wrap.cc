#include "prefetcher_wrap.h"

#include <atomic>
#include <cstring>
#include <string>
#include <utility>

#include "args.h"
#include "async_work.h"
#include "errors.h"
#include "read_result.h"

namespace edl::binding {

using prefetch::Item;
using prefetch::PopResult;
using recordio::ErrorCode;
using recordio::Status;

// Bytes of batch blocks freed since the last report to V8 (blocks die on any thread).
static std::atomic<int64_t> g_freed_external{0};

static void SettleExternal(Napi::Env env) {
  const int64_t freed = g_freed_external.exchange(0);
  if (freed != 0) Napi::MemoryManagement::AdjustExternalMemory(env, -freed);
}

// The memory of a delivered batch, shared by the JavaScript buffers over it and by the prefetcher
// once it was handed back (recycle): freed when the last of them lets go. V8 is told about it once,
// for its whole life, so that garbage collection keeps up with batches that are dropped, not
// released, without counting a recycled block again at every delivery.
struct BatchBlock {
  BatchBlock(uint8_t* data, size_t capacity) : p(data), cap(capacity) {}
  ~BatchBlock() {
    recordio::FreeBlock(p, cap);
    g_freed_external.fetch_add(static_cast<int64_t>(cap));
  }
  BatchBlock(const BatchBlock&) = delete;
  BatchBlock& operator=(const BatchBlock&) = delete;
  uint8_t* p;
  size_t cap;
};

namespace {

// What a delivered buffer's finalizer holds: its block, and its entry in the registry.
struct DeliveredRef {
  std::shared_ptr<BatchBlock> block;
  std::shared_ptr<Delivered> delivered;
  uint64_t generation;
};

// Hands `b` to JavaScript without a copy, as an ArrayBuffer over a BatchBlock: the recycled block
// it was assembled into (`owner`, while b.borrowed()), or a new block taking b's own storage.
// `*length` receives the bytes of the batch: the ArrayBuffer spans the whole block, so that it can
// carry later batches assembled into the same block (see Delivered::spares). The bytes past the
// batch are zeros or records this prefetcher decoded earlier, never other memory.
Napi::ArrayBuffer TakeBlock(Napi::Env env, recordio::ByteBuffer& b, std::shared_ptr<void>& owner,
                            const std::shared_ptr<Delivered>& delivered, size_t* length) {
  const size_t n = b.size();
  *length = n;
  if (n == 0) {
    owner.reset();
    return Napi::ArrayBuffer::New(env, 0);
  }
  std::shared_ptr<BatchBlock> block;
  if (owner != nullptr && b.borrowed()) {
    block = std::static_pointer_cast<BatchBlock>(owner);
    b.Release();  // borrowed: nothing to free
    owner.reset();
    auto spare = delivered->spares.find(block->p);
    if (spare != delivered->spares.end()) {
      Napi::ArrayBuffer buffer = spare->second.buffer.Value();
      const uint64_t generation = spare->second.generation;
      delivered->spares.erase(spare);
      // Not detached (transferred) meanwhile, and the block's whole span.
      if (!buffer.IsEmpty() && buffer.Data() == block->p && buffer.ByteLength() >= n) {
        delivered->blocks[block->p] = {block, generation};
        return buffer;
      }
    }
  } else {
    const size_t cap = b.capacity();
    uint8_t* p = b.Release();
    // The tail past the batch may be uninitialized: cleared once, for the block's whole life.
    std::memset(p + n, 0, cap - n);
    block = std::make_shared<BatchBlock>(p, cap);
    Napi::MemoryManagement::AdjustExternalMemory(env, static_cast<int64_t>(cap));
  }
  owner.reset();
  const uint64_t generation = delivered->next_generation++;
  delivered->blocks[block->p] = {block, generation};
  auto* ref = new DeliveredRef{block, delivered, generation};
  return Napi::ArrayBuffer::New(
      env, block->p, block->cap,
      [](Napi::Env e, void* data, DeliveredRef* r) {
        auto it = r->delivered->blocks.find(data);
        if (it != r->delivered->blocks.end() && it->second.generation == r->generation) {
          r->delivered->blocks.erase(it);
        }
        delete r;
        SettleExternal(e);
      },
      ref);
}

// The block behind a delivered ArrayBuffer, forgotten by the registry (a later delivery of the
// same block registers it again), and the generation it was registered with. Empty for anything
// else (a detached or foreign buffer).
prefetch::SpareBlock Reclaim(Napi::ArrayBuffer ab, Delivered& delivered, uint64_t* generation) {
  auto it = delivered.blocks.find(ab.Data());
  if (it == delivered.blocks.end()) return prefetch::SpareBlock();
  std::shared_ptr<BatchBlock> block = it->second.block.lock();
  *generation = it->second.generation;
  delivered.blocks.erase(it);
  if (block == nullptr) return prefetch::SpareBlock();
  return prefetch::SpareBlock{block->p, block->cap, std::move(block)};
}

// The NativePrefetchItem of docs/native-binding.md.
Napi::Object ItemToJs(Napi::Env env, Item& item, const std::shared_ptr<Delivered>& delivered) {
  SettleExternal(env);
  Napi::Object o = Napi::Object::New(env);
  o.Set("rangeId", Napi::Number::New(env, static_cast<double>(item.range_id)));
  o.Set("firstRecord", Napi::Number::New(env, static_cast<double>(item.first_record)));
  o.Set("records", Napi::Number::New(env, static_cast<double>(item.records)));
  o.Set("rangeDone", Napi::Boolean::New(env, item.range_done));
  size_t data_bytes = 0;
  Napi::ArrayBuffer data = TakeBlock(env, item.data, item.data_owner, delivered, &data_bytes);
  o.Set("data", Napi::Uint8Array::New(env, data_bytes, data, 0));
  size_t bounds_bytes = 0;
  Napi::ArrayBuffer bounds =
      TakeBlock(env, item.bounds, item.bounds_owner, delivered, &bounds_bytes);
  o.Set("bounds", Napi::Uint32Array::New(env, bounds_bytes / 4, bounds, 0));
  Napi::Array skipped = Napi::Array::New(env, item.skipped.size());
  for (size_t i = 0; i < item.skipped.size(); ++i) {
    const auto& f = item.skipped[i];
    skipped.Set(static_cast<uint32_t>(i), MakeFault(env, f.status, f.path, f.records));
  }
  o.Set("skipped", skipped);
  o.Set("error",
        item.kind == Item::Kind::kError
            ? Napi::Value(MakeFault(env, item.error.status, item.error.path, item.error.records))
            : env.Null());
  return o;
}

// Waits on a libuv thread for the next item: the AsyncWorker alternative to wait()'s
// ThreadSafeFunction (bench/get-batch.mjs compares the two).
class PullJob {
 public:
  PullJob(std::shared_ptr<prefetch::Prefetcher> core, std::shared_ptr<Delivered> delivered)
      : core_(std::move(core)), delivered_(std::move(delivered)) {}
  void Run() { result_ = core_->Pop(&item_, true); }
  const Status& status() const { return status_; }  // a pull never fails: null when closed
  const std::string& path() const { return path_; }
  Napi::Value Result(Napi::Env env) {
    return result_ == PopResult::kItem ? Napi::Value(ItemToJs(env, item_, delivered_)) : env.Null();
  }

 private:
  std::shared_ptr<prefetch::Prefetcher> core_;
  std::shared_ptr<Delivered> delivered_;
  PopResult result_ = PopResult::kClosed;
  Item item_;
  Status status_;
  std::string path_;
};

}  // namespace

Napi::Function PrefetcherWrap::Init(Napi::Env env) {
  return DefineClass(env, "NativePrefetcher",
                     {
                         InstanceMethod<&PrefetcherWrap::Enqueue>("enqueue"),
                         InstanceMethod<&PrefetcherWrap::End>("end"),
                         InstanceMethod<&PrefetcherWrap::TryPop>("tryPop"),
                         InstanceMethod<&PrefetcherWrap::Wait>("wait"),
                         InstanceMethod<&PrefetcherWrap::Pull>("pull"),
                         InstanceMethod<&PrefetcherWrap::Recycle>("recycle"),
                         InstanceMethod<&PrefetcherWrap::SetReadAhead>("setReadAhead"),
                         InstanceMethod<&PrefetcherWrap::Stats>("stats"),
                         InstanceMethod<&PrefetcherWrap::Close>("close"),
                     });
}

Napi::Value PrefetcherWrap::Create(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsObject() || !info[1].IsFunction()) {
    return ThrowTypeError(env, "(options: object, onReady: function)", "createPrefetcher");
  }
  Napi::Object o = info[0].As<Napi::Object>();
  double threads, batch_records, batch_bytes, max_bytes, max_batches, max_files;
  // Only what keeps the conversions defined; the options were validated in TypeScript.
  if (!GetNumber(o, "threads", 0, 256, &threads) ||
      !GetNumber(o, "batchRecords", 1, 4294967295.0, &batch_records) ||
      !GetNumber(o, "batchBytes", 1, 4294967295.0, &batch_bytes) ||
      !GetNumber(o, "maxBufferedBytes", 1, kMaxSafeInteger, &max_bytes) ||
      !GetNumber(o, "maxBufferedBatches", 1, 4294967295.0, &max_batches) ||
      !GetNumber(o, "maxOpenFiles", 1, 1e6, &max_files) || !o.Get("skipCorrupt").IsBoolean()) {
    return ThrowTypeError(env, "valid prefetcher options", "createPrefetcher");
  }
  prefetch::PrefetchOptions opts;
  opts.threads = static_cast<uint32_t>(threads);
  opts.batch_records = static_cast<uint32_t>(batch_records);
  opts.batch_bytes = static_cast<uint64_t>(batch_bytes);
  opts.max_buffered_bytes = static_cast<uint64_t>(max_bytes);
  opts.max_buffered_batches = static_cast<uint32_t>(max_batches);
  opts.max_open_files = static_cast<size_t>(max_files);
  opts.skip_corrupt = o.Get("skipCorrupt").As<Napi::Boolean>().Value();
  return NewWrapped(env, env.GetInstanceData<AddonData>()->prefetcher_constructor, opts, {info[1]});
}

PrefetcherWrap::PrefetcherWrap(const Napi::CallbackInfo& info)
    : Napi::ObjectWrap<PrefetcherWrap>(info) {
  Napi::Env env = info.Env();
  prefetch::PrefetchOptions opts;
  if (!TakeHandoff(info, "createPrefetcher() to be used", "NativePrefetcher", &opts, 1)) return;
  core_ = std::make_shared<prefetch::Prefetcher>(opts);
  // onReady runs on the main thread when a wait() is over; it holds the loop open only while
  // someone waits (see Wait/Unref).
  on_ready_ =
      Napi::ThreadSafeFunction::New(env, info[1].As<Napi::Function>(), "edl.prefetch.ready", 0, 1);
  has_tsfn_ = true;
  on_ready_.Unref(env);
  Napi::ThreadSafeFunction tsfn = on_ready_;
  core_->SetNotify([tsfn]() mutable { tsfn.NonBlockingCall(); });
  Status s = core_->Start();
  if (!s.ok()) {
    Shutdown();
    ThrowStatus(env, s, "");
    return;
  }
  registry_ = env.GetInstanceData<AddonData>()->registry;
  registry_->open.insert(this);
}

PrefetcherWrap::~PrefetcherWrap() {
  Shutdown();
  if (registry_) registry_->open.erase(this);
}

void PrefetcherWrap::Shutdown() {
  if (core_) {
    // Joins the threads: no notification can be sent after this.
    core_->Close();
    core_.reset();
  }
  // No batch is delivered any more: the spare blocks' buffers may go.
  delivered_->spares.clear();
  if (has_tsfn_) {
    has_tsfn_ = false;
    on_ready_.Release();
  }
}

void PrefetcherWrap::Unref(Napi::Env env) {
  if (refed_ && has_tsfn_) {
    refed_ = false;
    on_ready_.Unref(env);
  }
}

Napi::Value PrefetcherWrap::Enqueue(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint64_t start = 0;
  uint64_t count = 0;
  if (info.Length() < 3 || !info[0].IsString() || !SafeCount(info[1], &start) ||
      !SafeCount(info[2], &count)) {
    return ThrowTypeError(env, "(path: string, start: number, count: number)", "enqueue");
  }
  std::string path = info[0].As<Napi::String>().Utf8Value();
  if (!core_) return ThrowStatus(env, Status(ErrorCode::kClosed, "prefetcher is closed"), path);
  auto id = core_->Enqueue({path, start, count});
  if (!id.ok()) return ThrowStatus(env, id.status(), path);
  return Napi::Number::New(env, static_cast<double>(id.value()));
}

Napi::Value PrefetcherWrap::End(const Napi::CallbackInfo& info) {
  if (core_) core_->EndInput();
  return info.Env().Undefined();
}

Napi::Value PrefetcherWrap::TryPop(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Unref(env);
  if (!core_) return env.Null();
  Item item;
  switch (core_->Pop(&item, false)) {
    case PopResult::kItem:
      return ItemToJs(env, item, delivered_);
    case PopResult::kEmpty:
      return env.Undefined();
    default:
      return env.Null();
  }
}

Napi::Value PrefetcherWrap::Wait(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!core_ || !has_tsfn_) return Napi::Boolean::New(env, true);
  if (!refed_) {
    refed_ = true;
    on_ready_.Ref(env);
  }
  const bool ready = core_->RequestNotify();
  if (ready) Unref(env);
  return Napi::Boolean::New(env, ready);
}

Napi::Value PrefetcherWrap::Pull(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!core_) return ResolvedPromise(env, env.Null());
  return QueueJob<PullJob>(env, "edl.prefetch.pull", core_, delivered_);
}

Napi::Value PrefetcherWrap::Recycle(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsArrayBuffer() || !info[1].IsArrayBuffer()) {
    return ThrowTypeError(env, "(data: ArrayBuffer, bounds: ArrayBuffer)", "recycle");
  }
  SettleExternal(env);
  Napi::ArrayBuffer data_buffer = info[0].As<Napi::ArrayBuffer>();
  Napi::ArrayBuffer bounds_buffer = info[1].As<Napi::ArrayBuffer>();
  uint64_t data_generation = 0;
  uint64_t bounds_generation = 0;
  prefetch::SpareBlock data = Reclaim(data_buffer, *delivered_, &data_generation);
  prefetch::SpareBlock bounds = Reclaim(bounds_buffer, *delivered_, &bounds_generation);
  if (!core_) return env.Undefined();
  const void* data_block = data.p;
  const void* bounds_block = bounds.p;
  const prefetch::RecycleResult kept = core_->Recycle(std::move(data), std::move(bounds));
  // The buffers of kept blocks are held until a batch assembled into their block is delivered.
  if (kept.data_kept) {
    delivered_->spares[data_block] = {Napi::Persistent(data_buffer), data_generation};
  }
  if (kept.bounds_kept) {
    delivered_->spares[bounds_block] = {Napi::Persistent(bounds_buffer), bounds_generation};
  }
  return env.Undefined();
}

Napi::Value PrefetcherWrap::Stats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  prefetch::PrefetchStats s;
  if (core_) s = core_->Stats();
  return Counters(env, {{"bufferedBytes", s.buffered_bytes},
                        {"peakBufferedBytes", s.peak_buffered_bytes},
                        {"bufferedBatches", s.buffered_batches},
                        {"peakBufferedBatches", s.peak_buffered_batches},
                        {"rangesEnqueued", s.ranges_enqueued},
                        {"rangesDone", s.ranges_done},
                        {"batchesDelivered", s.batches_delivered},
                        {"piecesDecoded", s.pieces_decoded},
                        {"openFiles", s.open_files},
                        {"fileOpens", s.file_opens},
                        {"batchesRecycled", s.batches_recycled},
                        {"spareBlocks", s.spare_blocks},
                        {"threads", s.threads},
                        {"activeThreads", s.active_threads},
                        {"parkedThreads", s.parked_threads},
                        {"maxBufferedBytes", s.max_buffered_bytes},
                        {"decodeNanoseconds", s.decode_ns},
                        {"decodedBytes", s.decoded_bytes},
                        {"chunksCarried", s.chunks_carried}});
}

Napi::Value PrefetcherWrap::SetReadAhead(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  // Checked in TypeScript; here only what keeps the conversions defined.
  if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsNumber()) {
    return ThrowTypeError(env, "(maxBufferedBytes: number, activeThreads: number)", "setReadAhead");
  }
  const double bytes = info[0].As<Napi::Number>().DoubleValue();
  const double threads = info[1].As<Napi::Number>().DoubleValue();
  if (!(bytes >= 1 && bytes <= kMaxSafeInteger) || !(threads >= 0 && threads <= 256)) {
    return ThrowTypeError(env, "(maxBufferedBytes: 1.., activeThreads: 0..256)", "setReadAhead");
  }
  if (core_) core_->SetReadAhead(static_cast<uint64_t>(bytes), static_cast<uint32_t>(threads));
  return env.Undefined();
}

Napi::Value PrefetcherWrap::Close(const Napi::CallbackInfo& info) {
  Shutdown();
  return info.Env().Undefined();
}

}  // namespace edl::binding
