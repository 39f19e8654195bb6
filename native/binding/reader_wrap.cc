#include "reader_wrap.h"

#include <utility>

#include "errors.h"
#include "reader.h"

namespace edl::binding {

using recordio::ErrorCode;
using recordio::ReadOutput;
using recordio::Status;

namespace {

constexpr const char* kReadSignature =
    "(start: number, count: number, skipCorrupt: boolean, reuseData?: ArrayBuffer, "
    "reuseBounds?: ArrayBuffer)";

// Hands a decoded buffer to JavaScript without a copy. The ArrayBuffer spans the whole block
// (capacity, not just the bytes used) so that JavaScript can hand it back for a later read
// (RecordBatch.release()) and have it filled in place. The bytes past the view are zeros or earlier
// decoded records of this process, never foreign memory (small blocks are malloc'ed at exact size).
// V8 is told about the memory so that garbage collection keeps up with large batches.
Napi::ArrayBuffer TakeArrayBuffer(Napi::Env env, recordio::ByteBuffer& b) {
  const size_t cap = b.capacity();
  uint8_t* p = b.Release();
  Napi::MemoryManagement::AdjustExternalMemory(env, static_cast<int64_t>(cap));
  return Napi::ArrayBuffer::New(env, p, cap, [cap](Napi::Env e, void* q) {
    recordio::FreeBlock(q, cap);
    Napi::MemoryManagement::AdjustExternalMemory(e, -static_cast<int64_t>(cap));
  });
}

// `data` or `bounds` of a result: a view of `b`'s bytes, in the ArrayBuffer handed in for reuse
// when the read fitted in it, else in a new external ArrayBuffer.
template <typename View>
View TakeView(Napi::Env env, recordio::ByteBuffer& b, const Napi::ObjectReference& reused,
              size_t element) {
  const size_t n = b.size();
  if (b.borrowed()) {
    b.Release();
    return View::New(env, n / element, reused.Value().As<Napi::ArrayBuffer>(), 0);
  }
  if (b.data() == nullptr) return View::New(env, 0);
  return View::New(env, n / element, TakeArrayBuffer(env, b), 0);
}

Napi::Object MakeResult(Napi::Env env, ReadOutput& out, const std::string& path,
                        const Napi::ObjectReference& reuse_data,
                        const Napi::ObjectReference& reuse_bounds) {
  Napi::Object r = Napi::Object::New(env);
  r.Set("data", TakeView<Napi::Uint8Array>(env, out.data, reuse_data, 1));
  r.Set("bounds", TakeView<Napi::Uint32Array>(env, out.bounds, reuse_bounds, 4));
  r.Set("firstRecord", Napi::Number::New(env, static_cast<double>(out.first_record)));
  Napi::Array skipped = Napi::Array::New(env, out.skipped.size());
  for (size_t i = 0; i < out.skipped.size(); ++i) {
    skipped.Set(static_cast<uint32_t>(i),
                MakeFault(env, out.skipped[i].status, path, out.skipped[i].records));
  }
  r.Set("skipped", skipped);
  r.Set("error", out.has_error
                     ? Napi::Value(MakeFault(env, out.error.status, path, out.error.records))
                     : env.Null());
  return r;
}

struct ReadArgs {
  uint64_t start = 0;
  uint64_t count = 0;
  bool skip_corrupt = false;
};

// Optional 4th / 5th arguments: ArrayBuffers of earlier results handed back for reuse (or
// undefined). Anything else is a caller bug.
bool ParseReuse(const Napi::CallbackInfo& info, size_t i, Napi::ObjectReference* ref) {
  if (info.Length() <= i || info[i].IsUndefined() || info[i].IsNull()) return true;
  if (!info[i].IsArrayBuffer()) return false;
  *ref = Napi::Persistent(info[i].As<Napi::Object>());
  return true;
}

// Points `b` at a reused ArrayBuffer. Its memory stays valid while `ref` holds the ArrayBuffer
// (JavaScript does not touch a buffer it handed back until the read returns it).
void BorrowInto(const Napi::ObjectReference& ref, recordio::ByteBuffer* b) {
  if (ref.IsEmpty()) return;
  Napi::ArrayBuffer ab = ref.Value().As<Napi::ArrayBuffer>();
  b->Borrow(static_cast<uint8_t*>(ab.Data()), ab.ByteLength());
}

bool ParseReadArgs(const Napi::CallbackInfo& info, ReadArgs* a, Napi::ObjectReference* reuse_data,
                   Napi::ObjectReference* reuse_bounds) {
  if (info.Length() < 3 || !info[0].IsNumber() || !info[1].IsNumber() || !info[2].IsBoolean()) {
    return false;
  }
  const double start = info[0].As<Napi::Number>().DoubleValue();
  const double count = info[1].As<Napi::Number>().DoubleValue();
  // Only what keeps the conversion defined; range checks are TypeScript's (and ReadRecords').
  if (!(start >= 0 && start <= 9007199254740991.0 && count >= 0 && count <= 9007199254740991.0)) {
    return false;
  }
  a->start = static_cast<uint64_t>(start);
  a->count = static_cast<uint64_t>(count);
  a->skip_corrupt = info[2].As<Napi::Boolean>().Value();
  if (!ParseReuse(info, 3, reuse_data) || !ParseReuse(info, 4, reuse_bounds)) return false;
  // One buffer for both would have the bounds overwrite the records.
  if (!reuse_data->IsEmpty() && !reuse_bounds->IsEmpty() &&
      reuse_data->Value().StrictEquals(reuse_bounds->Value())) {
    return false;
  }
  return true;
}

class ReadWorker : public Napi::AsyncWorker {
 public:
  ReadWorker(Napi::Env env, std::shared_ptr<const ReaderCore> core, ReadArgs args,
             Napi::ObjectReference reuse_data, Napi::ObjectReference reuse_bounds)
      : Napi::AsyncWorker(env, "edl.recordio.read"),
        core_(std::move(core)),
        args_(args),
        deferred_(Napi::Promise::Deferred::New(env)),
        reuse_data_(std::move(reuse_data)),
        reuse_bounds_(std::move(reuse_bounds)) {
    // Resolved here, on the main thread; the pool thread only sees raw memory kept alive by the
    // references until OnOK.
    BorrowInto(reuse_data_, &out_.data);
    BorrowInto(reuse_bounds_, &out_.bounds);
  }

  Napi::Promise Promise() const { return deferred_.Promise(); }

  void Execute() override {
    status_ = recordio::ReadRecords(*core_->file, core_->index, args_.start, args_.count,
                                    args_.skip_corrupt, &out_);
  }

  void OnOK() override {
    Napi::Env env = Env();
    Napi::HandleScope scope(env);
    if (!status_.ok()) {
      deferred_.Reject(MakeError(env, status_, core_->path).Value());
      return;
    }
    deferred_.Resolve(MakeResult(env, out_, core_->path, reuse_data_, reuse_bounds_));
  }

  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  std::shared_ptr<const ReaderCore> core_;
  ReadArgs args_;
  Napi::Promise::Deferred deferred_;
  Napi::ObjectReference reuse_data_;
  Napi::ObjectReference reuse_bounds_;
  Status status_;
  ReadOutput out_;
};

}  // namespace

Napi::Function ReaderWrap::Init(Napi::Env env) {
  return DefineClass(env, "NativeReader",
                     {
                         InstanceAccessor<&ReaderWrap::Path>("path"),
                         InstanceAccessor<&ReaderWrap::NumRecords>("numRecords"),
                         InstanceAccessor<&ReaderWrap::NumChunks>("numChunks"),
                         InstanceAccessor<&ReaderWrap::FileSize>("fileSize"),
                         InstanceMethod<&ReaderWrap::ChunkTable>("chunkTable"),
                         InstanceMethod<&ReaderWrap::Read>("read"),
                         InstanceMethod<&ReaderWrap::ReadSync>("readSync"),
                         InstanceMethod<&ReaderWrap::Close>("close"),
                     });
}

Napi::Value ReaderWrap::Open(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) return ThrowTypeError(env, "a string", "path");
  auto core = std::make_shared<ReaderCore>();
  core->path = info[0].As<Napi::String>().Utf8Value();
  auto file = recordio::PosixFile::Open(core->path);
  if (!file.ok()) return ThrowStatus(env, file.status(), core->path);
  core->file = std::move(file.value());
  Status s = recordio::ScanIndex(*core->file, &core->index);
  if (!s.ok()) return ThrowStatus(env, s, core->path);
  // Nothing readable at all (e.g. not a RecordIO file): say so now rather than at the first read.
  if (core->index.chunks.empty() && !core->index.tail.ok()) {
    return ThrowStatus(env, core->index.tail, core->path);
  }
  auto* data = env.GetInstanceData<AddonData>();
  auto* handoff = new std::shared_ptr<const ReaderCore>(std::move(core));
  Napi::Object obj = data->reader_constructor.New({Napi::External<void>::New(env, handoff)});
  if (obj.IsEmpty()) {
    delete handoff;
    return env.Undefined();
  }
  return obj;
}

ReaderWrap::ReaderWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<ReaderWrap>(info) {
  Napi::Env env = info.Env();
  // Only openReader() makes readers: it passes the opened core through an External.
  if (info.Length() != 1 || !info[0].IsExternal()) {
    ThrowTypeError(env, "openReader() to be used", "NativeReader");
    return;
  }
  auto* handoff =
      static_cast<std::shared_ptr<const ReaderCore>*>(info[0].As<Napi::External<void>>().Data());
  core_ = std::move(*handoff);
  delete handoff;
  path_ = core_->path;
  num_records_ = static_cast<double>(core_->index.num_records);
  num_chunks_ = static_cast<double>(core_->index.chunks.size());
  file_size_ = static_cast<double>(core_->index.file_size);
  registry_ = env.GetInstanceData<AddonData>()->registry;
  registry_->open.insert(this);
}

ReaderWrap::~ReaderWrap() {
  if (registry_) registry_->open.erase(this);
}

Napi::Value ReaderWrap::Path(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), path_);
}
Napi::Value ReaderWrap::NumRecords(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), num_records_);
}
Napi::Value ReaderWrap::NumChunks(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), num_chunks_);
}
Napi::Value ReaderWrap::FileSize(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), file_size_);
}

Napi::Value ReaderWrap::ChunkTable(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!core_) return ThrowStatus(env, Status(ErrorCode::kClosed, "reader is closed"), path_);
  const auto& chunks = core_->index.chunks;
  Napi::Float64Array t = Napi::Float64Array::New(env, chunks.size() * 5);
  double* p = t.Data();
  for (const auto& c : chunks) {
    *p++ = static_cast<double>(c.offset);
    *p++ = c.header.compressor;
    *p++ = c.header.compressed_size;
    *p++ = c.header.num_records;
    *p++ = static_cast<double>(c.first_record);
  }
  return t;
}

Napi::Value ReaderWrap::Read(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ReadArgs args;
  Napi::ObjectReference reuse_data;
  Napi::ObjectReference reuse_bounds;
  if (!ParseReadArgs(info, &args, &reuse_data, &reuse_bounds)) {
    return ThrowTypeError(env, kReadSignature, "read");
  }
  if (!core_) {
    auto d = Napi::Promise::Deferred::New(env);
    d.Reject(MakeError(env, Status(ErrorCode::kClosed, "reader is closed"), path_).Value());
    return d.Promise();
  }
  auto* worker = new ReadWorker(env, core_, args, std::move(reuse_data), std::move(reuse_bounds));
  Napi::Promise p = worker->Promise();
  worker->Queue();
  return p;
}

Napi::Value ReaderWrap::ReadSync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ReadArgs args;
  Napi::ObjectReference reuse_data;
  Napi::ObjectReference reuse_bounds;
  if (!ParseReadArgs(info, &args, &reuse_data, &reuse_bounds)) {
    return ThrowTypeError(env, kReadSignature, "readSync");
  }
  if (!core_) return ThrowStatus(env, Status(ErrorCode::kClosed, "reader is closed"), path_);
  ReadOutput out;
  BorrowInto(reuse_data, &out.data);
  BorrowInto(reuse_bounds, &out.bounds);
  Status s = recordio::ReadRecords(*core_->file, core_->index, args.start, args.count,
                                   args.skip_corrupt, &out);
  if (!s.ok()) return ThrowStatus(env, s, path_);  // ~ByteBuffer leaves borrowed storage alone
  return MakeResult(env, out, path_, reuse_data, reuse_bounds);
}

Napi::Value ReaderWrap::Close(const Napi::CallbackInfo& info) {
  // Reads in flight hold their own reference: the file closes when the last one finishes.
  core_.reset();
  return info.Env().Undefined();
}

}  // namespace edl::binding
