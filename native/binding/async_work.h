// The shapes every wrapper repeats around node-addon-api: a job run on the libuv pool that settles
// a promise, a promise settled at once, and the hand-off of a native object from a factory
// function (openReader, createWriter, ...) to its wrapper's constructor.
#ifndef EDL_BINDING_ASYNC_WORK_H_
#define EDL_BINDING_ASYNC_WORK_H_

#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "errors.h"
#include "napi.h"
#include "status.h"

namespace edl::binding {

/// Runs `Job` on the libuv pool and settles a promise with it. A Job is constructed on the main
/// thread (where it may take references to JavaScript values), and provides
///   void Run();                               // pool thread: no N-API calls
///   const recordio::Status& status() const;   // not OK: the promise rejects with it ...
///   const std::string& path() const;          // ... naming this file
///   Napi::Value Result(Napi::Env env);        // else it resolves with this (main thread)
template <typename Job>
class PromiseWorker final : public Napi::AsyncWorker {
 public:
  template <typename... Args>
  PromiseWorker(Napi::Env env, const char* name, Args&&... args)
      : Napi::AsyncWorker(env, name),
        deferred_(Napi::Promise::Deferred::New(env)),
        job_(std::forward<Args>(args)...) {}

  Napi::Promise Promise() const { return deferred_.Promise(); }
  void Execute() override { job_.Run(); }
  void OnOK() override {
    Napi::Env env = Env();
    Napi::HandleScope scope(env);
    if (!job_.status().ok()) {
      deferred_.Reject(MakeError(env, job_.status(), job_.path()).Value());
      return;
    }
    deferred_.Resolve(job_.Result(env));
  }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  Job job_;
};

/// Queues a `Job` built from `args` (named `name` in async hooks) and returns its promise.
template <typename Job, typename... Args>
Napi::Promise QueueJob(Napi::Env env, const char* name, Args&&... args) {
  auto* worker = new PromiseWorker<Job>(env, name, std::forward<Args>(args)...);
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

/// Runs a `Job` built from `args` on the calling thread (the ...Sync twins): its result, or its
/// status thrown.
template <typename Job, typename... Args>
Napi::Value RunJobNow(Napi::Env env, Args&&... args) {
  Job job(std::forward<Args>(args)...);
  job.Run();
  if (!job.status().ok()) return ThrowStatus(env, job.status(), job.path());
  return job.Result(env);
}

/// Runs a `Job` built from `args` on the pool (a promise) when `async`, else here (its result):
/// the one body behind each pair of entry points such as read() and readSync().
template <typename Job, typename... Args>
Napi::Value StartJob(Napi::Env env, bool async, const char* name, Args&&... args) {
  if (async) return QueueJob<Job>(env, name, std::forward<Args>(args)...);
  return RunJobNow<Job>(env, std::forward<Args>(args)...);
}

/// A promise already rejected with `s`, e.g. for a read after close().
inline Napi::Promise RejectedPromise(Napi::Env env, const recordio::Status& s,
                                     const std::string& path) {
  auto d = Napi::Promise::Deferred::New(env);
  d.Reject(MakeError(env, s, path).Value());
  return d.Promise();
}

/// A promise already resolved with `value`.
inline Napi::Promise ResolvedPromise(Napi::Env env, Napi::Value value) {
  auto d = Napi::Promise::Deferred::New(env);
  d.Resolve(value);
  return d.Promise();
}

/// Builds a wrapped object through its constructor `ctor`, handing it `state` through an External
/// (followed by `extra` arguments): only the factory functions make these objects, and the
/// constructor takes the state with TakeHandoff. The state is freed here whatever the constructor
/// did with it. Returns undefined when the constructor threw.
template <typename State>
Napi::Value NewWrapped(Napi::Env env, const Napi::FunctionReference& ctor, State state,
                       std::initializer_list<napi_value> extra = {}) {
  auto handoff = std::make_unique<State>(std::move(state));
  std::vector<napi_value> args{Napi::External<State>::New(env, handoff.get())};
  args.insert(args.end(), extra.begin(), extra.end());
  Napi::Object obj = ctor.New(args);
  if (obj.IsEmpty()) return env.Undefined();
  return obj;
}

/// In a wrapper's constructor: moves the state NewWrapped handed over into `*out`. False (with a
/// TypeError saying to use `factory`) when the constructor was called another way, e.g. with `new`
/// from JavaScript, or with other than `1 + extra` arguments.
template <typename State>
bool TakeHandoff(const Napi::CallbackInfo& info, const char* factory, const char* cls, State* out,
                 size_t extra = 0) {
  if (info.Length() != 1 + extra || !info[0].IsExternal()) {
    ThrowTypeError(info.Env(), factory, cls);
    return false;
  }
  *out = std::move(*info[0].As<Napi::External<State>>().Data());
  return true;
}

}  // namespace edl::binding

#endif  // EDL_BINDING_ASYNC_WORK_H_
