// NativeReader: an opened, indexed RecordIO file (docs/native-binding.md).
#ifndef EDL_BINDING_READER_WRAP_H_
#define EDL_BINDING_READER_WRAP_H_

#include <memory>
#include <string>

#include "addon_data.h"
#include "file.h"
#include "index.h"
#include "napi.h"

namespace edl::binding {

/// What a read needs; immutable once opened, so reads on the thread pool share it freely and
/// keep the file open until the last one finishes, even after close().
struct ReaderCore {
  std::string path;
  std::shared_ptr<recordio::LocalFile> file;
  recordio::FileIndex index;
};

class ReaderWrap : public Napi::ObjectWrap<ReaderWrap>, public Closable {
 public:
  static Napi::Function Init(Napi::Env env);
  /// openReader(path): opens and scans; throws on failure.
  static Napi::Value Open(const Napi::CallbackInfo& info);

  explicit ReaderWrap(const Napi::CallbackInfo& info);
  ~ReaderWrap() override;
  void CloseForTeardown() override { core_.reset(); }
  /// The opened file and index; null after close() (the chunk cache shares them).
  std::shared_ptr<const ReaderCore> core() const { return core_; }

 private:
  Napi::Value Path(const Napi::CallbackInfo& info);
  Napi::Value NumRecords(const Napi::CallbackInfo& info);
  Napi::Value NumChunks(const Napi::CallbackInfo& info);
  Napi::Value FileSize(const Napi::CallbackInfo& info);
  Napi::Value ChunkTable(const Napi::CallbackInfo& info);
  Napi::Value Read(const Napi::CallbackInfo& info);
  Napi::Value ReadSync(const Napi::CallbackInfo& info);
  // read() on the libuv pool (async) or readSync() on the calling thread.
  Napi::Value StartRead(const Napi::CallbackInfo& info, bool async);
  Napi::Value Close(const Napi::CallbackInfo& info);

  std::shared_ptr<const ReaderCore> core_;
  std::shared_ptr<Registry> registry_;
  std::string path_;
  double num_records_ = 0;
  double num_chunks_ = 0;
  double file_size_ = 0;
};

}  // namespace edl::binding

#endif  // EDL_BINDING_READER_WRAP_H_
