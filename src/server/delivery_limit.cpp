#include "server/delivery_limit.h"

#include <fmt/format.h>

#include <limits>

namespace strata::server {

namespace {

class PersistedLimit final : public DeliveryLimit {
 public:
  explicit PersistedLimit(std::shared_ptr<node::StreamHandle> s) : stream_(std::move(s)) {}
  uint64_t end() const override { return stream_->persisted_next(); }
  void await_beyond(uint64_t offset, std::function<void(Status)> done) override {
    // Hurried like a remote confirm (stream_appender.h): with publishers
    // waiting the cut is hurried anyway; without (a tail left unuploaded
    // by a restart) a caught-up consumer must not wait for the fragment's
    // size or age bound.
    stream_->await_remote(offset + 1, std::move(done));
  }

 private:
  const std::shared_ptr<node::StreamHandle> stream_;
};

class LeaseLimit final : public DeliveryLimit {
 public:
  explicit LeaseLimit(std::shared_ptr<node::StreamHandle> s) : stream_(std::move(s)) {}
  uint64_t end() const override {
    return stream_->lease_ended() ? 0 : std::numeric_limits<uint64_t>::max();
  }
  void await_beyond(uint64_t, std::function<void(Status)> done) override {
    if (!stream_->lease_ended()) return done(Status::OK());
    done(Error(Errc::unavailable,
               fmt::format("stream {}: this node's cluster lease has ended: it delivers nothing "
                           "more",
                           stream_->name())));
  }

 private:
  const std::shared_ptr<node::StreamHandle> stream_;
};

}  // namespace

std::shared_ptr<DeliveryLimit> lease_limit(std::shared_ptr<node::StreamHandle> stream) {
  if (!stream) return nullptr;
  return std::make_shared<LeaseLimit>(std::move(stream));
}

std::shared_ptr<DeliveryLimit> persisted_limit(std::shared_ptr<node::StreamHandle> stream) {
  if (!stream || !stream->tiered()) return nullptr;
  return std::make_shared<PersistedLimit>(std::move(stream));
}

}  // namespace strata::server
