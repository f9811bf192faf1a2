#include "store_closer.h"

#include <spdlog/spdlog.h>

#include "open_store.h"

namespace strata::erl {

StoreCloser::StoreCloser() {
  thread_ = std::thread([this] { run(); });
}

StoreCloser::~StoreCloser() {
  shutdown();
}

void StoreCloser::close_later(std::shared_ptr<OpenStore> store) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!stopping_) {
      ++pending_[store->dir()];
      queue_.push_back(std::move(store));
      work_cv_.notify_one();
      return;
    }
  }
  close_one(store);
}

void StoreCloser::close_one(const std::shared_ptr<OpenStore>& store) {
  const Status s = store->close();
  if (!s.ok())
    spdlog::warn("strata_ra_nif {}: close after the owner died: {}", store->dir(), s.to_string());
}

void StoreCloser::run() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    work_cv_.wait(l, [&] { return !queue_.empty() || stopping_; });
    if (queue_.empty()) break;
    std::shared_ptr<OpenStore> store = std::move(queue_.front());
    queue_.pop_front();
    l.unlock();
    close_one(store);
    const std::string dir = store->dir();
    // The last reference may be this one: free the store here, off the
    // schedulers, before telling open() the directory is free.
    store.reset();
    l.lock();
    auto it = pending_.find(dir);
    if (it != pending_.end() && --it->second == 0) pending_.erase(it);
    done_cv_.notify_all();
  }
}

bool StoreCloser::wait_closed(const std::string& dir, std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> l(mu_);
  return done_cv_.wait_for(l, limit, [&] { return pending_.count(dir) == 0; });
}

void StoreCloser::shutdown() {
  std::lock_guard<std::mutex> sl(shutdown_mu_);
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
    work_cv_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

}  // namespace strata::erl
