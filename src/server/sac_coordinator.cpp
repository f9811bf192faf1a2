#include "server/sac_coordinator.h"

#include <asio/steady_timer.hpp>
#include <mutex>
#include <optional>

namespace strata::server {

struct SacCoordinator::Impl : std::enable_shared_from_this<Impl> {
  Impl(asio::io_context& io, std::chrono::milliseconds timeout,
       std::function<void(const SacEffect&)> d)
      : groups(timeout), timer(io), deliver(std::move(d)) {}

  // Under mu: delivers `effects` and arms the timer for the groups' next
  // deadline.
  void apply(const std::vector<SacEffect>& effects) {
    for (const auto& e : effects) deliver(e);
    if (stopped) return;
    auto next = groups.next_deadline();
    if (next == armed) return;
    armed = next;
    if (!next) {
      timer.cancel();
      return;
    }
    // Re-arming cancels the previous wait (its handler sees
    // operation_aborted); a handler already due runs anyway and expires
    // only what is due.
    timer.expires_at(*next);
    timer.async_wait([weak = weak_from_this()](const std::error_code& ec) {
      auto self = weak.lock();
      if (ec || !self) return;
      std::lock_guard l(self->mu);
      // Whatever deadline it fired for, re-armed for the next one after
      // this step.
      self->armed.reset();
      self->apply(self->groups.expire(std::chrono::steady_clock::now()));
    });
  }

  std::mutex mu;
  SacGroups groups;
  asio::steady_timer timer;
  const std::function<void(const SacEffect&)> deliver;
  std::optional<SacTime> armed;  // the deadline the timer is armed for
  bool stopped = false;
};

SacCoordinator::SacCoordinator(asio::io_context& io, std::chrono::milliseconds answer_timeout,
                               std::function<void(const SacEffect&)> deliver)
    : impl_(std::make_shared<Impl>(io, answer_timeout, std::move(deliver))) {}

SacCoordinator::~SacCoordinator() {
  stop();
}

void SacCoordinator::step(const std::function<std::vector<SacEffect>(SacGroups&, SacTime)>& step) {
  std::lock_guard l(impl_->mu);
  impl_->apply(step(impl_->groups, std::chrono::steady_clock::now()));
}

void SacCoordinator::stop() {
  std::lock_guard l(impl_->mu);
  impl_->stopped = true;
  impl_->timer.cancel();
}

}  // namespace strata::server
