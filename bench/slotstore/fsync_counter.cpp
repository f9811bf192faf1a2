#include "fsync_counter.h"

#include <dlfcn.h>

#include <atomic>

namespace {
std::atomic<uint64_t> g_syncs{0};

using SyncFn = int (*)(int);
SyncFn next(const char* name) {
  return reinterpret_cast<SyncFn>(dlsym(RTLD_NEXT, name));
}
}  // namespace

extern "C" int fsync(int fd) {
  static SyncFn real = next("fsync");
  g_syncs.fetch_add(1, std::memory_order_relaxed);
  return real(fd);
}

extern "C" int fdatasync(int fd) {
  static SyncFn real = next("fdatasync");
  g_syncs.fetch_add(1, std::memory_order_relaxed);
  return real(fd);
}

namespace strata::bench {
uint64_t fsync_count() {
  return g_syncs.load();
}
}  // namespace strata::bench
