// Per-environment state of the addon: constructors and the objects to close at teardown.
#ifndef EDL_BINDING_ADDON_DATA_H_
#define EDL_BINDING_ADDON_DATA_H_

#include <memory>
#include <unordered_set>

#include "napi.h"

namespace edl::binding {

/// Something the environment cleanup hook must close (open readers and writers).
class Closable {
 public:
  virtual ~Closable() = default;
  virtual void CloseForTeardown() = 0;
};

/// Open objects of one environment. Shared by the addon data and the cleanup hook, so that
/// neither outlives it whatever order Node tears them down in.
struct Registry {
  std::unordered_set<Closable*> open;
};

struct AddonData {
  Napi::FunctionReference reader_constructor;
  Napi::FunctionReference writer_constructor;
  Napi::FunctionReference prefetcher_constructor;
  Napi::FunctionReference chunk_cache_constructor;
  std::shared_ptr<Registry> registry = std::make_shared<Registry>();
};

}  // namespace edl::binding

#endif  // EDL_BINDING_ADDON_DATA_H_
