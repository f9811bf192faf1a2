// Governor: the node's pacing of fragment uploads (one per node, shared by
// every stream's uploader).
//
//  - Bytes: a token bucket (tier/token_bucket.h) in bytes per second with a
//    burst; `unlimited` (no rate configured) is a fast path that never
//    consults a bucket. An oversized transfer drives the bucket into debt
//    rather than waiting for a level the bucket can never reach.
//  - Concurrency: at most max_concurrent transfers hold a permit at once.
//  - Fairness: requests wait in one FIFO queue per owner (stream), and the
//    owners with waiting requests are served round robin, so a stream
//    catching up on a long backlog delays another stream's next fragment by
//    at most one transfer per busy stream, not by its whole backlog.
//  - cancel(owner) drops an owner's queued requests (a closed stream's
//    work never runs); their grant functions are destroyed uncalled.
//
// A granted Permit holds one concurrency slot until it is released
// (release() or destruction), from any thread. The uploader releases it
// when the transfer's task ends — completed, failed or past its deadline —
// so a hung transfer gives its slot back at its deadline.
//
// Thread safety: every method may be called from any thread. A grant runs
// on the thread that made room for it (the requester, a releaser, or the
// io thread of the refill timer), with no lock held; it must be quick
// (post the transfer elsewhere).
#pragma once

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "common/clock.h"
#include "tier/token_bucket.h"

namespace strata::tier {

struct GovernorConfig {
  std::optional<uint64_t> rate_bytes_per_sec;  // nullopt: unlimited
  uint64_t burst_bytes = 0;                    // 0: rate / 5
  uint32_t max_concurrent = 8;                 // >= 1
};

struct GovernorStats {
  uint64_t queued = 0;  // requests waiting
  uint64_t queued_bytes = 0;
  uint64_t in_flight = 0;  // permits held
  uint64_t granted = 0;    // counters
  uint64_t granted_bytes = 0;
  uint64_t cancelled = 0;
  uint64_t throttle_waits = 0;  // times the head request waited for tokens
  bool unlimited = true;
  uint64_t rate_bytes_per_sec = 0;
};

class Governor {
 public:
  class Permit {
   public:
    Permit() = default;
    Permit(Permit&&) noexcept = default;
    Permit& operator=(Permit&&) noexcept;
    ~Permit() { release(); }
    void release();
    explicit operator bool() const { return gov_ != nullptr; }

   private:
    friend class Governor;
    explicit Permit(std::shared_ptr<Governor> g) : gov_(std::move(g)) {}
    std::shared_ptr<Governor> gov_;
  };
  using Grant = std::function<void(Permit)>;

  static std::shared_ptr<Governor> make(asio::io_context& io, GovernorConfig cfg, Clock& clock);

  // Queues a transfer of `bytes` for `owner`; `grant` runs once admitted.
  void request(uint64_t owner, uint64_t bytes, Grant grant);
  void cancel(uint64_t owner);
  GovernorStats stats() const;
  const GovernorConfig& config() const { return cfg_; }

  Governor(asio::io_context& io, GovernorConfig cfg, Clock& clock);

 private:
  struct Request {
    uint64_t bytes = 0;
    Grant grant;
  };
  void released();
  void admit_locked(std::unique_lock<std::mutex>& l);

  GovernorConfig cfg_;
  Clock& clock_;
  asio::steady_timer timer_;
  mutable std::mutex mu_;
  TokenBucket bucket_;
  std::map<uint64_t, std::deque<Request>> queues_;
  std::deque<uint64_t> ring_;  // owners with queued requests, in serving order
  bool timer_armed_ = false;
  std::weak_ptr<Governor> self_;
  GovernorStats st_;
};

}  // namespace strata::tier
