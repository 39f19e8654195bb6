#include "tfrecord_binding.h"

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "args.h"
#include "async_work.h"
#include "errors.h"
#include "file.h"
#include "tfrecord_format.h"
#include "tfrecord_frames.h"
#include "tfrecord_index.h"

namespace edl::binding {

using recordio::Status;

namespace {

class ScanJob {
 public:
  explicit ScanJob(std::string path) : path_(std::move(path)) {}

  void Run() {
    auto file = recordio::LocalFile::Open(path_);
    if (!file.ok()) {
      open_status_ = file.status();
      return;
    }
    file_size_ = file.value()->Size();
    scan_fault_ = tfrecord::ScanIndex(*file.value(), &offsets_);
  }

  // Only a file that cannot be opened rejects; a fault of the scan is part of the result.
  const Status& status() const { return open_status_; }
  const std::string& path() const { return path_; }

  Napi::Value Result(Napi::Env env) {
    Napi::Object r = Napi::Object::New(env);
    Napi::Float64Array offsets = Napi::Float64Array::New(env, offsets_.size());
    for (size_t i = 0; i < offsets_.size(); ++i) offsets[i] = static_cast<double>(offsets_[i]);
    r.Set("offsets", offsets);
    r.Set("fileSize", Napi::Number::New(env, static_cast<double>(file_size_)));
    if (!scan_fault_.ok()) r.Set("fault", MakeFault(env, scan_fault_, path_, 0));
    return r;
  }

 private:
  std::string path_;
  Status open_status_;
  Status scan_fault_;
  std::vector<uint64_t> offsets_;
  uint64_t file_size_ = 0;
};

bool IsNonNegativeNumber(const Napi::Value& v) {
  double d = 0;
  return NumberIn(v, 0, HUGE_VAL, &d);
}

}  // namespace

Napi::Value TFRecordScan(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) return ThrowTypeError(env, "a string", "path");
  return QueueJob<ScanJob>(env, "edl.tfrecord.scan", info[0].As<Napi::String>().Utf8Value());
}

Napi::Value TFRecordDecode(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 6 || !IsUint8Array(info[0]))
    return ThrowTypeError(env, "a Uint8Array", "buf");
  if (!IsNonNegativeNumber(info[1])) return ThrowTypeError(env, "a number >= 0", "base");
  if (!IsNonNegativeNumber(info[2])) return ThrowTypeError(env, "a number >= 0", "maxRecords");
  if (!IsUint32Array(info[3])) return ThrowTypeError(env, "a Uint32Array", "bounds");
  if (!IsNonNegativeNumber(info[5])) return ThrowTypeError(env, "a number >= 0", "maxRecordSize");
  Napi::Uint8Array buf = info[0].As<Napi::Uint8Array>();
  Napi::Uint32Array bounds = info[3].As<Napi::Uint32Array>();
  if (buf.ByteLength() > UINT32_MAX) return ThrowTypeError(env, "under 4 GiB", "buf");
  const auto base = static_cast<uint64_t>(info[1].As<Napi::Number>().DoubleValue());
  auto max_records = static_cast<uint64_t>(info[2].As<Napi::Number>().DoubleValue());
  // Never write past the bounds array, whatever maxRecords says.
  if (max_records > bounds.ElementLength() / 2) max_records = bounds.ElementLength() / 2;
  const auto max_size = static_cast<uint64_t>(info[5].As<Napi::Number>().DoubleValue());
  tfrecord::DecodeResult r =
      tfrecord::DecodeFrames(buf.Data(), buf.ByteLength(), base, max_records, bounds.Data(),
                             info[4].ToBoolean().Value(), max_size);
  Napi::Object o = Napi::Object::New(env);
  o.Set("records", Napi::Number::New(env, static_cast<double>(r.records)));
  o.Set("consumed", Napi::Number::New(env, static_cast<double>(r.consumed)));
  o.Set("needMore", Napi::Boolean::New(env, r.need_more));
  if (!r.status.ok()) o.Set("fault", MakeFault(env, r.status, "", 0));
  return o;
}

Napi::Value TFRecordEncode(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !IsUint8Array(info[0]))
    return ThrowTypeError(env, "a Uint8Array", "data");
  if (!IsUint32Array(info[1])) return ThrowTypeError(env, "a Uint32Array", "bounds");
  Napi::Uint8Array data = info[0].As<Napi::Uint8Array>();
  Napi::Uint32Array bounds = info[1].As<Napi::Uint32Array>();
  const size_t n = bounds.ElementLength() / 2;
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t b = bounds[2 * i];
    const uint32_t e = bounds[2 * i + 1];
    if (b > e || e > data.ByteLength()) return ThrowTypeError(env, "bounds within data", "bounds");
    total += tfrecord::kFrameOverhead + (e - b);
  }
  Napi::Uint8Array out = Napi::Uint8Array::New(env, total);
  uint8_t* p = out.Data();
  for (size_t i = 0; i < n; ++i) {
    const uint32_t b = bounds[2 * i];
    const uint32_t len = bounds[2 * i + 1] - b;
    tfrecord::StoreU64(p, len);
    tfrecord::StoreU32(p + 8, tfrecord::MaskedCrc32c(p, 8));
    if (len > 0) std::memcpy(p + tfrecord::kHeaderSize, data.Data() + b, len);
    tfrecord::StoreU32(p + tfrecord::kHeaderSize + len,
                       tfrecord::MaskedCrc32c(p + tfrecord::kHeaderSize, len));
    p += tfrecord::kFrameOverhead + len;
  }
  return out;
}

Napi::Value TFRecordDetect(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !IsUint8Array(info[0]))
    return ThrowTypeError(env, "a Uint8Array", "head");
  Napi::Uint8Array head = info[0].As<Napi::Uint8Array>();
  return Napi::String::New(env, tfrecord::DetectCompression(head.Data(), head.ByteLength()));
}

}  // namespace edl::binding
