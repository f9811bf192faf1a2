// StoreCloser: closes, on a thread of the library, the stores whose Erlang
// owner died (enif_monitor_process's down callback) or whose handle was
// garbage-collected while still open — both run on a scheduler, which must
// not wait for the final fsync or a compaction. (A restarted owner's open
// waits for such a close: StoreRegistry.)
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

namespace strata::erl {

class OpenStore;

class StoreCloser {
 public:
  StoreCloser();
  ~StoreCloser();
  StoreCloser(const StoreCloser&) = delete;
  StoreCloser& operator=(const StoreCloser&) = delete;

  // Queues `store` to be closed; never blocks. After shutdown() (the library
  // is being unloaded), closes it in the calling thread instead.
  void close_later(std::shared_ptr<OpenStore> store);
  // Closes everything queued, then ends the thread. Idempotent.
  void shutdown();

 private:
  void run();
  void close_one(const std::shared_ptr<OpenStore>& store);

  std::mutex mu_;
  std::condition_variable work_cv_;  // queued work or shutdown
  std::deque<std::shared_ptr<OpenStore>> queue_;
  bool stopping_ = false;
  std::mutex shutdown_mu_;
  std::thread thread_;
};

}  // namespace strata::erl
