// Turns recordio Status values into the JS error and fault objects of docs/native-binding.md.
#ifndef EDL_BINDING_ERRORS_H_
#define EDL_BINDING_ERRORS_H_

#include <cstdint>
#include <string>

#include "napi.h"
#include "status.h"

namespace edl::binding {

/// An Error with code, path, chunk and offset properties.
Napi::Error MakeError(Napi::Env env, const recordio::Status& s, const std::string& path);

/// A plain NativeFault object: code, message, path, chunk, offset, records.
Napi::Object MakeFault(Napi::Env env, const recordio::Status& s, const std::string& path,
                       uint64_t records);

/// Throws `s` as a JS exception and returns undefined (for `return ThrowStatus(...)`).
Napi::Value ThrowStatus(Napi::Env env, const recordio::Status& s, const std::string& path);

/// Throws a TypeError naming the argument (the binding only asserts; TypeScript validates).
Napi::Value ThrowTypeError(Napi::Env env, const char* what, const char* name);

}  // namespace edl::binding

#endif  // EDL_BINDING_ERRORS_H_
