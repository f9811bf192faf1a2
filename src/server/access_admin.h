// AccessAdmin: the users and permissions in force on a node — the
// configuration's (the base, replaced by a SIGHUP reload) with the stored
// overlay of live changes applied (auth/access_overlay.h) — and the live
// changes themselves. Every change is stored first (compare-and-set on the
// store's version, retried over a concurrent change from another node) and
// then put in force on this node; the other nodes of a cluster see it at
// their next refresh (a poll of the store, every `poll_interval`).
// Thread safety: every method may be called from any thread; edits and
// refreshes block on the store.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "auth/access_overlay.h"
#include "server/access_policy.h"
#include "server/access_store.h"

namespace strata::server {

class AccessAdmin {
 public:
  // `on_change` runs after new rules are in force (connections recheck).
  AccessAdmin(AccessPolicy* policy, std::unique_ptr<AccessStore> store,
              std::shared_ptr<const auth::AccessControl> base, std::function<void()> on_change);
  ~AccessAdmin();
  AccessAdmin(const AccessAdmin&) = delete;
  AccessAdmin& operator=(const AccessAdmin&) = delete;

  // Loads the stored overlay and puts the rules in force; a stored overlay
  // that cannot be read is an error naming its place (nothing is changed
  // on an overlay that cannot be read). poll_interval > 0 starts a thread
  // that refreshes at that pace.
  Status start(std::chrono::milliseconds poll_interval);
  void stop();

  // A reloaded configuration: the overlay applied over the new base.
  void set_base(std::shared_ptr<const auth::AccessControl> base);
  // Re-reads the store; new rules go in force when its version changed.
  Status refresh();

  // An edit of the overlay, given the rules now in force: it returns an
  // error to refuse (not_found, invalid_argument), else the edit is
  // checked (the result must build), stored and put in force.
  using Edit = std::function<Status(auth::AccessOverlay*, const auth::AccessControl& now)>;
  Status edit(const Edit& e);

  std::shared_ptr<const auth::AccessControl> current() const { return policy_->current(); }
  std::string store_where() const { return store_->where(); }
  int64_t version() const;

 private:
  // The base with `o` applied (what of it cannot apply is logged).
  Result<std::shared_ptr<const auth::AccessControl>> build_locked(
      const auth::AccessOverlay& o) const;
  void install_locked(auth::AccessOverlay o, int64_t version,
                      std::shared_ptr<const auth::AccessControl> rules);
  // build_locked, then install_locked; an error names the store.
  Status put_in_force_locked(const auth::AccessOverlay& o, int64_t version);

  AccessPolicy* policy_;
  std::unique_ptr<AccessStore> store_;
  std::function<void()> on_change_;

  mutable std::mutex mu_;  // the fields below; edits one at a time
  std::shared_ptr<const auth::AccessControl> base_;
  auth::AccessOverlay overlay_;
  int64_t version_ = 0;
  bool stopping_ = false;
  std::condition_variable cv_;
  std::thread poller_;
};

}  // namespace strata::server
