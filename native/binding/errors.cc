#include "errors.h"

namespace edl::binding {

Napi::Error MakeError(Napi::Env env, const recordio::Status& s, const std::string& path) {
  Napi::Error e = Napi::Error::New(env, s.message());
  Napi::Object o = e.Value();
  o.Set("code", Napi::String::New(env, s.code_name()));
  o.Set("path", Napi::String::New(env, path));
  o.Set("chunk", Napi::Number::New(env, static_cast<double>(s.chunk())));
  o.Set("offset", Napi::Number::New(env, static_cast<double>(s.offset())));
  return e;
}

Napi::Object MakeFault(Napi::Env env, const recordio::Status& s, const std::string& path,
                       uint64_t records) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("code", Napi::String::New(env, s.code_name()));
  o.Set("message", Napi::String::New(env, s.message()));
  o.Set("path", Napi::String::New(env, path));
  o.Set("chunk", Napi::Number::New(env, static_cast<double>(s.chunk())));
  o.Set("offset", Napi::Number::New(env, static_cast<double>(s.offset())));
  o.Set("records", Napi::Number::New(env, static_cast<double>(records)));
  return o;
}

Napi::Value ThrowStatus(Napi::Env env, const recordio::Status& s, const std::string& path) {
  MakeError(env, s, path).ThrowAsJavaScriptException();
  return env.Undefined();
}

Napi::Value ThrowTypeError(Napi::Env env, const char* what, const char* name) {
  Napi::TypeError::New(env, std::string("Expected ") + what + " for " + name)
      .ThrowAsJavaScriptException();
  return env.Undefined();
}

}  // namespace edl::binding
