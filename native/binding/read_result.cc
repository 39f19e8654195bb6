#include "read_result.h"

#include <cstring>

#include "errors.h"
#include "memory.h"

namespace edl::binding {

namespace {

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

bool ParseOneReuse(const Napi::CallbackInfo& info, size_t i, Napi::ObjectReference* ref) {
  if (info.Length() <= i || info[i].IsUndefined() || info[i].IsNull()) return true;
  if (!info[i].IsArrayBuffer()) return false;
  *ref = Napi::Persistent(info[i].As<Napi::Object>());
  return true;
}

void BorrowOne(const Napi::ObjectReference& ref, recordio::ByteBuffer* b) {
  if (ref.IsEmpty()) return;
  Napi::ArrayBuffer ab = ref.Value().As<Napi::ArrayBuffer>();
  b->Borrow(static_cast<uint8_t*>(ab.Data()), ab.ByteLength());
}

}  // namespace

bool ParseReuse(const Napi::CallbackInfo& info, size_t i, Reuse* reuse) {
  if (!ParseOneReuse(info, i, &reuse->data) || !ParseOneReuse(info, i + 1, &reuse->bounds)) {
    return false;
  }
  return reuse->data.IsEmpty() || reuse->bounds.IsEmpty() ||
         !reuse->data.Value().StrictEquals(reuse->bounds.Value());
}

void BorrowInto(const Reuse& reuse, recordio::ReadOutput* out) {
  BorrowOne(reuse.data, &out->data);
  BorrowOne(reuse.bounds, &out->bounds);
}

Napi::Object MakeResult(Napi::Env env, recordio::ReadOutput& out, const std::string& path,
                        const Reuse& reuse) {
  Napi::Object r = Napi::Object::New(env);
  r.Set("data", TakeView<Napi::Uint8Array>(env, out.data, reuse.data, 1));
  r.Set("bounds", TakeView<Napi::Uint32Array>(env, out.bounds, reuse.bounds, 4));
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

Napi::Uint32Array CopyToUint32Array(Napi::Env env, const uint32_t* values, size_t n) {
  Napi::Uint32Array a = Napi::Uint32Array::New(env, n);
  if (n > 0) std::memcpy(a.Data(), values, n * sizeof(uint32_t));
  return a;
}

Napi::Object Counters(Napi::Env env,
                      std::initializer_list<std::pair<const char*, uint64_t>> counters) {
  Napi::Object o = Napi::Object::New(env);
  for (const auto& [key, value] : counters) {
    o.Set(key, Napi::Number::New(env, static_cast<double>(value)));
  }
  return o;
}

}  // namespace edl::binding
