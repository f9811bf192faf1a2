// A bounded pool of libcurl easy handles. Each handle keeps its own
// connection cache, so a handle returned to the pool keeps its keep-alive
// connection for the next request (connection reuse), and the pool size is
// the bound on requests in flight. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

typedef void CURL;

namespace strata::net {

class CurlPool {
 public:
  explicit CurlPool(int max_handles);
  ~CurlPool();
  CurlPool(const CurlPool&) = delete;
  CurlPool& operator=(const CurlPool&) = delete;

  // A handle lent to one request; returns it to the pool when destroyed.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& o) noexcept : pool_(o.pool_), h_(o.h_) { o.pool_ = nullptr, o.h_ = nullptr; }
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    CURL* get() const { return h_; }
    explicit operator bool() const { return h_ != nullptr; }

   private:
    friend class CurlPool;
    Lease(CurlPool* p, CURL* h) : pool_(p), h_(h) {}
    CurlPool* pool_ = nullptr;
    CURL* h_ = nullptr;
  };

  // Waits up to `wait` for a free handle; an empty Lease on timeout.
  Lease acquire(std::chrono::milliseconds wait);

  int in_flight() const;
  int max_handles() const { return max_; }

 private:
  void release(CURL* h);

  const int max_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<CURL*> idle_;
  int created_ = 0;
  int in_flight_ = 0;
};

// curl_global_init, once per process, before the first handle.
void ensure_curl_initialized();

}  // namespace strata::net
