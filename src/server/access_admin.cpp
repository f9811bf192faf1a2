#include "server/access_admin.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace strata::server {

namespace {
// Compare-and-set attempts for one edit: each failure means another node
// changed the users meanwhile; more than this many in a row is a storm.
constexpr int kEditAttempts = 8;
}  // namespace

AccessAdmin::AccessAdmin(AccessPolicy* policy, std::unique_ptr<AccessStore> store,
                         std::shared_ptr<const auth::AccessControl> base,
                         std::function<void()> on_change)
    : policy_(policy),
      store_(std::move(store)),
      on_change_(std::move(on_change)),
      base_(std::move(base)) {}

AccessAdmin::~AccessAdmin() {
  stop();
}

Status AccessAdmin::start(std::chrono::milliseconds poll_interval) {
  {
    std::lock_guard l(mu_);
    STRATA_ASSIGN_OR_RETURN(StoredOverlay s, store_->load());
    STRATA_TRY(put_in_force_locked(s.overlay, s.version));
  }
  if (poll_interval.count() > 0) {
    poller_ = std::thread([this, poll_interval] {
      std::unique_lock l(mu_);
      while (!cv_.wait_for(l, poll_interval, [this] { return stopping_; })) {
        l.unlock();
        if (auto st = refresh(); !st.ok()) {
          spdlog::warn("serve: users: re-reading {}: {}", store_->where(), st.error().to_string());
        }
        l.lock();
      }
    });
  }
  return Status::OK();
}

void AccessAdmin::stop() {
  {
    std::lock_guard l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (poller_.joinable()) poller_.join();
}

int64_t AccessAdmin::version() const {
  std::lock_guard l(mu_);
  return version_;
}

Result<std::shared_ptr<const auth::AccessControl>> AccessAdmin::build_locked(
    const auth::AccessOverlay& o) const {
  std::vector<std::string> ignored;
  auto rules = auth::apply_overlay(*base_, o, &ignored);
  if (!rules.ok()) return rules;
  for (const auto& why : ignored) {
    spdlog::warn("serve: users: a live change in {} is not applied: {}", store_->where(), why);
  }
  return rules;
}

void AccessAdmin::install_locked(auth::AccessOverlay o, int64_t version,
                                 std::shared_ptr<const auth::AccessControl> rules) {
  overlay_ = std::move(o);
  version_ = version;
  policy_->replace(std::move(rules));
}

Status AccessAdmin::put_in_force_locked(const auth::AccessOverlay& o, int64_t version) {
  auto rules = build_locked(o);
  if (!rules.ok()) {
    return std::move(rules).error().with_context("users: the live changes in " + store_->where());
  }
  install_locked(o, version, std::move(rules).value());
  return Status::OK();
}

void AccessAdmin::set_base(std::shared_ptr<const auth::AccessControl> base) {
  {
    std::lock_guard l(mu_);
    base_ = std::move(base);
    if (auto st = put_in_force_locked(overlay_, version_); !st.ok()) {
      // The new configuration contradicts a live change (its vhost is
      // gone, ...): the configuration alone, as before there were changes.
      spdlog::warn("serve: users: {}; the configuration's users alone are in force",
                   st.error().to_string());
      policy_->replace(base_);
    }
  }
  if (on_change_) on_change_();
}

Status AccessAdmin::refresh() {
  STRATA_ASSIGN_OR_RETURN(StoredOverlay s, store_->load());
  {
    std::lock_guard l(mu_);
    if (s.version == version_) return Status::OK();
    STRATA_TRY(put_in_force_locked(s.overlay, s.version));
    spdlog::info("serve: users: live changes of another node applied (version {})", s.version);
  }
  if (on_change_) on_change_();
  return Status::OK();
}

Status AccessAdmin::edit(const Edit& e) {
  {
    std::lock_guard l(mu_);
    for (int attempt = 0;; ++attempt) {
      auth::AccessOverlay next = overlay_;
      STRATA_TRY(e(&next, *policy_->current()));
      // Built before it is stored: a change that does not build is
      // refused, not kept for every node to trip over.
      STRATA_ASSIGN_OR_RETURN(auto rules, build_locked(next));
      STRATA_ASSIGN_OR_RETURN(auto saved, store_->save(next, version_));
      if (saved) {
        install_locked(std::move(next), *saved, std::move(rules));
        break;
      }
      if (attempt + 1 == kEditAttempts) {
        return Error(Errc::unavailable,
                     fmt::format("users: {} kept changing under this edit ({} attempts)",
                                 store_->where(), kEditAttempts));
      }
      // Another node changed the users: start over from what it stored.
      STRATA_ASSIGN_OR_RETURN(StoredOverlay s, store_->load());
      STRATA_TRY(put_in_force_locked(s.overlay, s.version));
    }
  }
  if (on_change_) on_change_();
  return Status::OK();
}

}  // namespace strata::server
