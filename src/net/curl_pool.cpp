#include "net/curl_pool.h"

#include <curl/curl.h>

#include <mutex>

#include "common/assert.h"

namespace strata::net {

void ensure_curl_initialized() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

CurlPool::CurlPool(int max_handles) : max_(max_handles) {
  STRATA_ASSERT(max_handles > 0, "curl pool needs at least one handle");
  ensure_curl_initialized();
}

CurlPool::~CurlPool() {
  std::lock_guard lock(mu_);
  STRATA_ASSERT(in_flight_ == 0, "curl pool destroyed with requests in flight");
  for (CURL* h : idle_) curl_easy_cleanup(h);
}

CurlPool::Lease CurlPool::acquire(std::chrono::milliseconds wait) {
  std::unique_lock lock(mu_);
  bool ok = cv_.wait_for(lock, wait, [&] { return !idle_.empty() || created_ < max_; });
  if (!ok) return {};
  CURL* h;
  if (!idle_.empty()) {
    h = idle_.back();
    idle_.pop_back();
  } else {
    h = curl_easy_init();
    if (!h) return {};
    ++created_;
  }
  ++in_flight_;
  return Lease(this, h);
}

void CurlPool::release(CURL* h) {
  {
    std::lock_guard lock(mu_);
    --in_flight_;
    idle_.push_back(h);
  }
  cv_.notify_one();
}

int CurlPool::in_flight() const {
  std::lock_guard lock(mu_);
  return in_flight_;
}

CurlPool::Lease::~Lease() {
  if (pool_ && h_) pool_->release(h_);
}

}  // namespace strata::net
