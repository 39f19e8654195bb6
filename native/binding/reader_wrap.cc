#include "reader_wrap.h"

#include <utility>

#include "args.h"
#include "async_work.h"
#include "errors.h"
#include "read_result.h"
#include "reader.h"

namespace edl::binding {

using recordio::ErrorCode;
using recordio::ReadOutput;
using recordio::Status;

namespace {

constexpr const char* kReadSignature =
    "(start: number, count: number, skipCorrupt: boolean, reuseData?: ArrayBuffer, "
    "reuseBounds?: ArrayBuffer)";

struct ReadArgs {
  uint64_t start = 0;
  uint64_t count = 0;
  bool skip_corrupt = false;
};

bool ParseReadArgs(const Napi::CallbackInfo& info, ReadArgs* a, Reuse* reuse) {
  // Only what keeps the conversion defined; range checks are TypeScript's (and ReadRecords').
  if (info.Length() < 3 || !SafeCount(info[0], &a->start) || !SafeCount(info[1], &a->count) ||
      !info[2].IsBoolean()) {
    return false;
  }
  a->skip_corrupt = info[2].As<Napi::Boolean>().Value();
  return ParseReuse(info, 3, reuse);
}

class ReadJob {
 public:
  ReadJob(std::shared_ptr<const ReaderCore> core, ReadArgs args, Reuse reuse)
      : core_(std::move(core)), args_(args), reuse_(std::move(reuse)) {
    // Resolved here, on the main thread; the pool thread only sees raw memory kept alive by the
    // references until Result.
    BorrowInto(reuse_, &out_);
  }

  void Run() {
    status_ = recordio::ReadRecords(*core_->file, core_->index, args_.start, args_.count,
                                    args_.skip_corrupt, &out_);
  }

  const Status& status() const { return status_; }
  const std::string& path() const { return core_->path; }
  Napi::Value Result(Napi::Env env) { return MakeResult(env, out_, core_->path, reuse_); }

 private:
  std::shared_ptr<const ReaderCore> core_;
  ReadArgs args_;
  Reuse reuse_;
  Status status_;
  ReadOutput out_;
};

Status Closed() { return Status(ErrorCode::kClosed, "reader is closed"); }

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
  auto file = recordio::LocalFile::Open(core->path);
  if (!file.ok()) return ThrowStatus(env, file.status(), core->path);
  core->file = std::move(file.value());
  Status s = recordio::ScanIndex(*core->file, &core->index);
  if (!s.ok()) return ThrowStatus(env, s, core->path);
  // Nothing readable at all (e.g. not a RecordIO file): say so now rather than at the first read.
  if (core->index.chunks.empty() && !core->index.tail.ok()) {
    return ThrowStatus(env, core->index.tail, core->path);
  }
  return NewWrapped(env, env.GetInstanceData<AddonData>()->reader_constructor,
                    std::shared_ptr<const ReaderCore>(std::move(core)));
}

ReaderWrap::ReaderWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<ReaderWrap>(info) {
  // Only openReader() makes readers: it hands the opened core over.
  if (!TakeHandoff(info, "openReader() to be used", "NativeReader", &core_)) return;
  path_ = core_->path;
  num_records_ = static_cast<double>(core_->index.num_records);
  num_chunks_ = static_cast<double>(core_->index.chunks.size());
  file_size_ = static_cast<double>(core_->index.file_size);
  registry_ = info.Env().GetInstanceData<AddonData>()->registry;
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
  if (!core_) return ThrowStatus(env, Closed(), path_);
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

Napi::Value ReaderWrap::Read(const Napi::CallbackInfo& info) { return StartRead(info, true); }

Napi::Value ReaderWrap::ReadSync(const Napi::CallbackInfo& info) { return StartRead(info, false); }

Napi::Value ReaderWrap::StartRead(const Napi::CallbackInfo& info, bool async) {
  Napi::Env env = info.Env();
  ReadArgs args;
  Reuse reuse;
  if (!ParseReadArgs(info, &args, &reuse)) {
    return ThrowTypeError(env, kReadSignature, async ? "read" : "readSync");
  }
  if (!core_) {
    return async ? Napi::Value(RejectedPromise(env, Closed(), path_))
                 : ThrowStatus(env, Closed(), path_);
  }
  return StartJob<ReadJob>(env, async, "edl.recordio.read", core_, args, std::move(reuse));
}

Napi::Value ReaderWrap::Close(const Napi::CallbackInfo& info) {
  // Reads in flight hold their own reference: the file closes when the last one finishes.
  core_.reset();
  return info.Env().Undefined();
}

}  // namespace edl::binding
