#include "memory_decode.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "args.h"
#include "async_work.h"
#include "errors.h"
#include "memory_range.h"
#include "read_result.h"
#include "tfrecord_index.h"

namespace edl::binding {

using recordio::ChunkInfo;
using recordio::MemoryRangeSpec;
using recordio::ReadOutput;
using recordio::Status;

namespace {

constexpr const char* kRecordIOSignature =
    "(bytes: Uint8Array, spec: { baseOffset, firstChunk, firstRecord, skip, count, skipCorrupt, "
    "maxDecodedBytes }, chunkTable: Float64Array | null, reuseData?: ArrayBuffer, reuseBounds?: "
    "ArrayBuffer)";
constexpr const char* kTFRecordSignature =
    "(bytes: Uint8Array, baseOffset: number, count: number, maxRecordSize: number)";

/// Numbers per chunk in a chunk table (as NativeReader.chunkTable() returns it): offset,
/// compressor, compressedSize, numRecords, firstRecord.
constexpr size_t kChunkFields = 5;

// The input, held by a reference so that it outlives a decode on the pool (JavaScript leaves it
// untouched until the promise settles, as with reused buffers). Its bytes are only read.
struct InputBytes {
  Napi::ObjectReference ref;
  const uint8_t* data = nullptr;
  size_t size = 0;
};

bool ParseInput(const Napi::Value& v, InputBytes* in) {
  if (!IsUint8Array(v)) return false;
  Napi::Uint8Array a = v.As<Napi::Uint8Array>();
  in->ref = Napi::Persistent(v.As<Napi::Object>());
  in->data = a.Data();
  in->size = a.ByteLength();
  return true;
}

// -1 (every record) or a count.
bool ParseCount(const Napi::Value& v, uint64_t all, uint64_t* count) {
  double d = 0;
  if (NumberIn(v, -1, -1, &d)) {
    *count = all;
    return true;
  }
  return SafeCount(v, count);
}

// The chunk table's numbers as ChunkInfo; false when a number is not a 32-bit header field or a
// safe offset (the table comes from an index in JavaScript, which is not trusted with memory).
bool ParseChunkTable(const Napi::Value& v, std::vector<ChunkInfo>* chunks) {
  Napi::Float64Array t = v.As<Napi::Float64Array>();
  if (t.ElementLength() % kChunkFields != 0) return false;
  const double* p = t.Data();
  chunks->resize(t.ElementLength() / kChunkFields);
  for (ChunkInfo& c : *chunks) {
    const auto field = [](double d) { return d >= 0 && d <= 4294967295.0 && d == std::floor(d); };
    if (!(p[0] >= 0 && p[0] <= kMaxSafeInteger && p[4] >= 0 && p[4] <= kMaxSafeInteger) ||
        !field(p[1]) || !field(p[2]) || !field(p[3])) {
      return false;
    }
    c.offset = static_cast<uint64_t>(p[0]);
    c.header.compressor = static_cast<uint32_t>(p[1]);
    c.header.compressed_size = static_cast<uint32_t>(p[2]);
    c.header.num_records = static_cast<uint32_t>(p[3]);
    c.first_record = static_cast<uint64_t>(p[4]);
    p += kChunkFields;
  }
  return true;
}

struct RecordIORangeArgs {
  InputBytes input;
  MemoryRangeSpec spec;
  bool has_table = false;
  std::vector<ChunkInfo> table;
  Reuse reuse;
};

bool ParseRecordIORange(const Napi::CallbackInfo& info, RecordIORangeArgs* a) {
  if (info.Length() < 3 || !ParseInput(info[0], &a->input) || !info[1].IsObject()) return false;
  Napi::Object o = info[1].As<Napi::Object>();
  MemoryRangeSpec& spec = a->spec;
  double max_bytes = 0;
  if (!SafeCount(o.Get("baseOffset"), &spec.base_offset) ||
      !SafeCount(o.Get("firstChunk"), &spec.first_chunk) ||
      !SafeCount(o.Get("firstRecord"), &spec.first_record) ||
      !SafeCount(o.Get("skip"), &spec.skip) ||
      !ParseCount(o.Get("count"), MemoryRangeSpec::kAllRecords, &spec.count) ||
      !o.Get("skipCorrupt").IsBoolean() ||
      !GetNumber(o, "maxDecodedBytes", 0, static_cast<double>(recordio::kMaxDecodedBytes),
                 &max_bytes)) {
    return false;
  }
  spec.skip_corrupt = o.Get("skipCorrupt").As<Napi::Boolean>().Value();
  spec.max_bytes = static_cast<uint64_t>(max_bytes);
  if (IsFloat64Array(info[2])) {
    if (!ParseChunkTable(info[2], &a->table)) return false;
    a->has_table = true;
  } else if (!info[2].IsNull()) {
    return false;
  }
  return ParseReuse(info, 3, &a->reuse);
}

// Decodes a RecordIO range from memory into a NativeReadResult. Faults name no file (path ""):
// the caller knows where the bytes came from and adds it.
class RecordIORangeJob {
 public:
  explicit RecordIORangeJob(RecordIORangeArgs args) : args_(std::move(args)) {
    if (args_.has_table) args_.spec.expected = &args_.table;
    BorrowInto(args_.reuse, &out_);
  }

  void Run() {
    status_ = recordio::DecodeMemoryRange(args_.input.data, args_.input.size, args_.spec, &out_);
  }
  const Status& status() const { return status_; }
  const std::string& path() const { return path_; }
  Napi::Value Result(Napi::Env env) { return MakeResult(env, out_, path_, args_.reuse); }

 private:
  RecordIORangeArgs args_;
  Status status_;
  ReadOutput out_;
  std::string path_;
};

struct TFRecordRangeArgs {
  InputBytes input;
  uint64_t base_offset = 0;
  uint64_t count = 0;
  uint64_t max_record_size = 0;
};

bool ParseTFRecordRange(const Napi::CallbackInfo& info, TFRecordRangeArgs* a) {
  return info.Length() >= 4 && ParseInput(info[0], &a->input) &&
         SafeCount(info[1], &a->base_offset) &&
         ParseCount(info[2], tfrecord::kAllRecords, &a->count) &&
         SafeCount(info[3], &a->max_record_size);
}

// Checks and locates the TFRecord frames of a range in memory: { bounds, fault }. The records stay
// where they are (bounds index the input): nothing is copied. A fault is part of the result (the
// records before it are in bounds), as with the file reads; only a range of 4 GiB or more, whose
// offsets do not fit the bounds, rejects.
class TFRecordRangeJob {
 public:
  explicit TFRecordRangeJob(TFRecordRangeArgs args) : args_(std::move(args)) {}

  void Run() {
    if (args_.input.size > UINT32_MAX) {
      status_ = Status(recordio::ErrorCode::kTooLarge,
                       "a range of " + std::to_string(args_.input.size) +
                           " bytes: TFRecord ranges decoded from memory must be under 4 GiB");
      return;
    }
    fault_ = tfrecord::DecodeRecords(args_.input.data, args_.input.size, args_.base_offset,
                                     args_.count, args_.max_record_size, &bounds_);
  }
  const Status& status() const { return status_; }
  const std::string& path() const { return path_; }
  Napi::Value Result(Napi::Env env) {
    Napi::Object r = Napi::Object::New(env);
    r.Set("bounds", CopyToUint32Array(env, bounds_.data(), bounds_.size()));
    r.Set("fault", fault_.ok() ? env.Null() : Napi::Value(MakeFault(env, fault_, path_, 0)));
    return r;
  }

 private:
  TFRecordRangeArgs args_;
  Status status_;
  Status fault_;
  std::vector<uint32_t> bounds_;
  std::string path_;
};

// Parses the arguments of `function` and starts its Job, on the pool or here.
template <typename Job, typename Args, bool (*Parse)(const Napi::CallbackInfo&, Args*)>
Napi::Value StartDecode(const Napi::CallbackInfo& info, bool async, const char* signature,
                        const char* function, const char* job_name) {
  Args args;
  if (!Parse(info, &args)) return ThrowTypeError(info.Env(), signature, function);
  return StartJob<Job>(info.Env(), async, job_name, std::move(args));
}

}  // namespace

template <bool kAsync>
Napi::Value RecordIODecodeRange(const Napi::CallbackInfo& info) {
  return StartDecode<RecordIORangeJob, RecordIORangeArgs, ParseRecordIORange>(
      info, kAsync, kRecordIOSignature, kAsync ? "recordioDecodeRange" : "recordioDecodeRangeSync",
      "edl.recordio.decodeRange");
}

template <bool kAsync>
Napi::Value TFRecordDecodeRange(const Napi::CallbackInfo& info) {
  return StartDecode<TFRecordRangeJob, TFRecordRangeArgs, ParseTFRecordRange>(
      info, kAsync, kTFRecordSignature, kAsync ? "tfrecordDecodeRange" : "tfrecordDecodeRangeSync",
      "edl.tfrecord.decodeRange");
}

template Napi::Value RecordIODecodeRange<true>(const Napi::CallbackInfo&);
template Napi::Value RecordIODecodeRange<false>(const Napi::CallbackInfo&);
template Napi::Value TFRecordDecodeRange<true>(const Napi::CallbackInfo&);
template Napi::Value TFRecordDecodeRange<false>(const Napi::CallbackInfo&);

}  // namespace edl::binding
