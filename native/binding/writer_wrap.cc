#include "writer_wrap.h"

#include <utility>

#include "args.h"
#include "async_work.h"
#include "errors.h"

namespace edl::binding {

using recordio::Compressor;
using recordio::Status;

namespace {

struct Handoff {
  std::unique_ptr<recordio::Writer> writer;
  std::string path;
};

}  // namespace

Napi::Function WriterWrap::Init(Napi::Env env) {
  return DefineClass(env, "NativeWriter",
                     {
                         InstanceMethod<&WriterWrap::Write>("write"),
                         InstanceMethod<&WriterWrap::WriteBatch>("writeBatch"),
                         InstanceAccessor<&WriterWrap::RecordsWritten>("recordsWritten"),
                         InstanceAccessor<&WriterWrap::ChunksWritten>("chunksWritten"),
                         InstanceAccessor<&WriterWrap::BytesWritten>("bytesWritten"),
                         InstanceMethod<&WriterWrap::Close>("close"),
                     });
}

Napi::Value WriterWrap::Create(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 4 || !info[0].IsString() || !info[1].IsNumber() || !info[2].IsNumber() ||
      !info[3].IsNumber()) {
    return ThrowTypeError(env,
                          "(path: string, compressor: 0 | 1 | 2, maxChunkBytes: number, "
                          "gzipLevel: number)",
                          "createWriter");
  }
  const int compressor = info[1].As<Napi::Number>().Int32Value();
  uint64_t max_chunk = 0;
  if (compressor < 0 || compressor > 2 || !SafeCount(info[2], &max_chunk)) {
    return ThrowTypeError(env, "a compressor id 0..2 and a non-negative maxChunkBytes",
                          "createWriter");
  }
  recordio::WriterOptions o;
  o.compressor = static_cast<Compressor>(compressor);
  o.max_chunk_bytes = max_chunk;
  o.gzip_level = info[3].As<Napi::Number>().Int32Value();
  Handoff handoff;
  handoff.path = info[0].As<Napi::String>().Utf8Value();
  auto w = recordio::Writer::Create(handoff.path, o);
  if (!w.ok()) return ThrowStatus(env, w.status(), handoff.path);
  handoff.writer = std::move(w.value());
  return NewWrapped(env, env.GetInstanceData<AddonData>()->writer_constructor, std::move(handoff));
}

WriterWrap::WriterWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<WriterWrap>(info) {
  Handoff handoff;
  if (!TakeHandoff(info, "createWriter() to be used", "NativeWriter", &handoff)) return;
  writer_ = std::move(handoff.writer);
  path_ = std::move(handoff.path);
  registry_ = info.Env().GetInstanceData<AddonData>()->registry;
  registry_->open.insert(this);
}

WriterWrap::~WriterWrap() {
  CloseForTeardown();
  if (registry_) registry_->open.erase(this);
}

void WriterWrap::CloseForTeardown() {
  if (writer_) writer_->Close();  // best effort: nobody is left to hear about a failure
}

Napi::Value WriterWrap::Write(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !IsUint8Array(info[0]))
    return ThrowTypeError(env, "a Uint8Array", "record");
  const Napi::Uint8Array a = info[0].As<Napi::Uint8Array>();
  Status s = writer_->Write(a.Data(), a.ByteLength());
  if (!s.ok()) return ThrowStatus(env, s, path_);
  return env.Undefined();
}

Napi::Value WriterWrap::WriteBatch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !IsUint8Array(info[0]) || !IsUint32Array(info[1])) {
    return ThrowTypeError(env, "(data: Uint8Array, bounds: Uint32Array)", "writeBatch");
  }
  const Napi::Uint8Array data = info[0].As<Napi::Uint8Array>();
  const Napi::Uint32Array bounds = info[1].As<Napi::Uint32Array>();
  const uint8_t* d = data.Data();
  const size_t n = data.ByteLength();
  const uint32_t* b = bounds.Data();
  const size_t pairs = bounds.ElementLength() / 2;
  // Memory safety, not option validation: a bad pair must never read outside `data`.
  for (size_t i = 0; i < pairs; ++i) {
    if (b[2 * i] > b[2 * i + 1] || b[2 * i + 1] > n) {
      Napi::RangeError::New(
          env, "Expected [begin, end) pairs inside data for bounds but received [" +
                   std::to_string(b[2 * i]) + ", " + std::to_string(b[2 * i + 1]) + ") at pair " +
                   std::to_string(i))
          .ThrowAsJavaScriptException();
      return env.Undefined();
    }
  }
  for (size_t i = 0; i < pairs; ++i) {
    Status s = writer_->Write(d + b[2 * i], b[2 * i + 1] - b[2 * i]);
    if (!s.ok()) return ThrowStatus(env, s, path_);
  }
  return env.Undefined();
}

Napi::Value WriterWrap::RecordsWritten(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(writer_->records_written()));
}
Napi::Value WriterWrap::ChunksWritten(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(writer_->chunks_written()));
}
Napi::Value WriterWrap::BytesWritten(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(writer_->bytes_written()));
}

Napi::Value WriterWrap::Close(const Napi::CallbackInfo& info) {
  Status s = writer_->Close();
  if (!s.ok()) return ThrowStatus(info.Env(), s, path_);
  return info.Env().Undefined();
}

}  // namespace edl::binding
