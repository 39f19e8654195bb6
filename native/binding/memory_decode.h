// Decoding byte ranges that JavaScript already holds in memory (fetched from object storage): the
// RecordIO and TFRecord entry points of docs/native-binding.md, "Decoding from memory".
#ifndef EDL_BINDING_MEMORY_DECODE_H_
#define EDL_BINDING_MEMORY_DECODE_H_

#include "napi.h"

namespace edl::binding {

/// recordioDecodeRange(bytes, spec, chunkTable, reuseData?, reuseBounds?): a promise settled on
/// the libuv pool (kAsync), or recordioDecodeRangeSync: the result, decoded on the calling thread.
template <bool kAsync>
Napi::Value RecordIODecodeRange(const Napi::CallbackInfo& info);

/// tfrecordDecodeRange(bytes, baseOffset, count, maxRecordSize) and tfrecordDecodeRangeSync,
/// likewise.
template <bool kAsync>
Napi::Value TFRecordDecodeRange(const Napi::CallbackInfo& info);

}  // namespace edl::binding

#endif  // EDL_BINDING_MEMORY_DECODE_H_
