// Argument unwrapping shared by the wrappers: the binding only asserts what keeps its conversions
// defined (TypeScript validates options and ranges, with one message format).
#ifndef EDL_BINDING_ARGS_H_
#define EDL_BINDING_ARGS_H_

#include <cstdint>

#include "napi.h"

namespace edl::binding {

/// Number.MAX_SAFE_INTEGER: the largest count or offset that crosses as a double unchanged.
inline constexpr double kMaxSafeInteger = 9007199254740991.0;

inline bool IsTypedArrayOf(const Napi::Value& v, napi_typedarray_type type) {
  return v.IsTypedArray() && v.As<Napi::TypedArray>().TypedArrayType() == type;
}
inline bool IsUint8Array(const Napi::Value& v) { return IsTypedArrayOf(v, napi_uint8_array); }
inline bool IsUint32Array(const Napi::Value& v) { return IsTypedArrayOf(v, napi_uint32_array); }
inline bool IsFloat64Array(const Napi::Value& v) { return IsTypedArrayOf(v, napi_float64_array); }

/// `v` as a number in [min, max] (NaN fails), into `*out`.
inline bool NumberIn(const Napi::Value& v, double min, double max, double* out) {
  if (!v.IsNumber()) return false;
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= min && d <= max)) return false;
  *out = d;
  return true;
}

/// `v` as a count or offset in [0, MAX_SAFE_INTEGER] (fractions truncate), into `*out`.
inline bool SafeCount(const Napi::Value& v, uint64_t* out) {
  double d = 0;
  if (!NumberIn(v, 0, kMaxSafeInteger, &d)) return false;
  *out = static_cast<uint64_t>(d);
  return true;
}

/// Property `key` of `o` as a number in [min, max], into `*out`.
inline bool GetNumber(const Napi::Object& o, const char* key, double min, double max, double* out) {
  return NumberIn(o.Get(key), min, max, out);
}

}  // namespace edl::binding

#endif  // EDL_BINDING_ARGS_H_
