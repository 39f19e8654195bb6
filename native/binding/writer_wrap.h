// NativeWriter: a RecordIO file being written (docs/native-binding.md).
#ifndef EDL_BINDING_WRITER_WRAP_H_
#define EDL_BINDING_WRITER_WRAP_H_

#include <memory>
#include <string>

#include "addon_data.h"
#include "napi.h"
#include "writer.h"

namespace edl::binding {

class WriterWrap : public Napi::ObjectWrap<WriterWrap>, public Closable {
 public:
  static Napi::Function Init(Napi::Env env);
  /// createWriter(path, compressor, maxChunkBytes, gzipLevel): throws on failure.
  static Napi::Value Create(const Napi::CallbackInfo& info);

  explicit WriterWrap(const Napi::CallbackInfo& info);
  ~WriterWrap() override;
  /// Flushes what was written: a writer never closed (process exit, garbage) loses nothing.
  void CloseForTeardown() override;

 private:
  Napi::Value Write(const Napi::CallbackInfo& info);
  Napi::Value WriteBatch(const Napi::CallbackInfo& info);
  Napi::Value RecordsWritten(const Napi::CallbackInfo& info);
  Napi::Value ChunksWritten(const Napi::CallbackInfo& info);
  Napi::Value BytesWritten(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);

  std::unique_ptr<recordio::Writer> writer_;
  std::shared_ptr<Registry> registry_;
  std::string path_;
};

}  // namespace edl::binding

#endif  // EDL_BINDING_WRITER_WRAP_H_
