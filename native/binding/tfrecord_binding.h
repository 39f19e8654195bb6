// The TFRecord functions of the addon: header scan (async), frame decode and encode, and
// compression detection. Reading bytes from files is left to Node (fs reads, streaming zlib):
// native code only checks and frames them, one call per batch.
#ifndef EDL_BINDING_TFRECORD_BINDING_H_
#define EDL_BINDING_TFRECORD_BINDING_H_

#include "napi.h"

namespace edl::binding {

/// tfrecordScan(path): Promise<{ offsets: Float64Array, fileSize: number, fault?: NativeFault }>.
Napi::Value TFRecordScan(const Napi::CallbackInfo& info);
/// tfrecordDecode(buf, base, maxRecords, bounds, verifyData, maxRecordSize):
/// { records, consumed, needMore, fault? }.
Napi::Value TFRecordDecode(const Napi::CallbackInfo& info);
/// tfrecordEncode(data, bounds): Uint8Array of the framed records.
Napi::Value TFRecordEncode(const Napi::CallbackInfo& info);
/// tfrecordDetect(head): 'none' | 'gzip' | 'zlib' | 'unknown'.
Napi::Value TFRecordDetect(const Napi::CallbackInfo& info);

}  // namespace edl::binding

#endif  // EDL_BINDING_TFRECORD_BINDING_H_
