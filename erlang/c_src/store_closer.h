// StoreCloser: closes, on a thread of the library, the stores whose Erlang
// owner died (enif_monitor_process's down callback) or whose handle was
// garbage-collected while still open — both run on a scheduler, which must
// not wait for the final fsync or a compaction.
//
// It also lets open() wait until a directory's store is closed: when a
// killed owner is restarted at once by its supervisor, the new owner's open
// waits here instead of finding <dir>/LOCK still held by the old store.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

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
  // Waits, at most `limit`, until no close of `dir` is queued or running.
  // false if one still is.
  bool wait_closed(const std::string& dir, std::chrono::milliseconds limit);
  // Closes everything queued, then ends the thread. Idempotent.
  void shutdown();

 private:
  void run();
  void close_one(const std::shared_ptr<OpenStore>& store);

  std::mutex mu_;
  std::condition_variable work_cv_;  // queued work or shutdown
  std::condition_variable done_cv_;  // a close finished
  std::deque<std::shared_ptr<OpenStore>> queue_;
  std::unordered_map<std::string, uint32_t> pending_;  // dir -> closes queued or running
  bool stopping_ = false;
  std::mutex shutdown_mu_;
  std::thread thread_;
};

}  // namespace strata::erl
