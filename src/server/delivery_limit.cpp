#include "server/delivery_limit.h"

#include "tier/uploader.h"

namespace strata::server {

namespace {

class PersistedLimit final : public DeliveryLimit {
 public:
  explicit PersistedLimit(std::shared_ptr<tier::Uploader> u) : uploader_(std::move(u)) {}
  uint64_t end() const override { return uploader_->persisted_next(); }
  void await_beyond(uint64_t offset, std::function<void(Status)> done) override {
    // Hurried like a remote confirm (stream_appender.h): with publishers
    // waiting the cut is hurried anyway; without (a tail left unuploaded
    // by a restart) a caught-up consumer must not wait for the fragment's
    // size or age bound.
    uploader_->await_remote(offset + 1, std::move(done));
  }

 private:
  const std::shared_ptr<tier::Uploader> uploader_;
};

}  // namespace

std::shared_ptr<DeliveryLimit> persisted_limit(std::shared_ptr<tier::Uploader> uploader) {
  if (!uploader) return nullptr;
  return std::make_shared<PersistedLimit>(std::move(uploader));
}

}  // namespace strata::server
