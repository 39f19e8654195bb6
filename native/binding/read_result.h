// Decoded records handed to JavaScript: the NativeReadResult of reads from files and from memory
// (one buffer plus [begin, end) bounds, no copy), the ArrayBuffers handed back for reuse, and the
// counter objects of stats().
#ifndef EDL_BINDING_READ_RESULT_H_
#define EDL_BINDING_READ_RESULT_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include "byte_buffer.h"
#include "napi.h"
#include "reader.h"

namespace edl::binding {

/// The ArrayBuffers of earlier results handed back to be decoded into (RecordBatch.release()).
struct Reuse {
  Napi::ObjectReference data;
  Napi::ObjectReference bounds;
};

/// Optional arguments `i` and `i + 1`: ArrayBuffers for reuse, or undefined/null. False for
/// anything else, and for one buffer given as both (the bounds would overwrite the records).
bool ParseReuse(const Napi::CallbackInfo& info, size_t i, Reuse* reuse);

/// Points `out`'s buffers at the reused ArrayBuffers (on the main thread; their memory stays
/// valid while `reuse` holds them, and JavaScript leaves them alone until the read settles).
void BorrowInto(const Reuse& reuse, recordio::ReadOutput* out);

/// The NativeReadResult of docs/native-binding.md, taking `out`'s buffers (no copy). Faults name
/// `path`.
Napi::Object MakeResult(Napi::Env env, recordio::ReadOutput& out, const std::string& path,
                        const Reuse& reuse);

/// A Uint32Array holding a copy of `values`.
Napi::Uint32Array CopyToUint32Array(Napi::Env env, const uint32_t* values, size_t n);

/// An object of named counters, e.g. { hits: 3, misses: 1 }.
Napi::Object Counters(Napi::Env env,
                      std::initializer_list<std::pair<const char*, uint64_t>> counters);

}  // namespace edl::binding

#endif  // EDL_BINDING_READ_RESULT_H_
