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
    // The last reference may be this one: free the store here, off the
    // schedulers.
    store.reset();
    l.lock();
  }
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
