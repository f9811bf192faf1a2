#include "tier/tiering_hooks.h"

#include <utility>

#include "tier/uploader.h"

namespace strata::tier {

TieringHooks::~TieringHooks() {
  detach();
}

void TieringHooks::attach(const std::shared_ptr<Uploader>& u,
                          const std::shared_ptr<log::StreamLog>& log) {
  detach();
  // Subscribed before mu_ is taken: the log calls may_delete_segment (which
  // takes mu_) while holding its own locks.
  std::weak_ptr<Uploader> weak = u;
  const uint64_t id = log->subscribe([weak](const log::CommittedChunk& c) {
    if (auto up = weak.lock()) up->on_commit(c);
  });
  std::lock_guard l(mu_);
  uploader_ = u;
  log_ = log;
  subscription_ = id;
}

void TieringHooks::detach() {
  std::weak_ptr<log::StreamLog> log;
  uint64_t id = 0;
  {
    std::lock_guard l(mu_);
    uploader_.reset();
    log = std::exchange(log_, {});
    id = std::exchange(subscription_, 0);
  }
  if (id == 0) return;
  if (auto l = log.lock()) l->unsubscribe(id);
}

std::shared_ptr<Uploader> TieringHooks::current() {
  std::lock_guard l(mu_);
  return uploader_.lock();
}

bool TieringHooks::may_delete_segment(const log::SegmentInfo& segment) {
  uint64_t persisted = 0;
  if (auto u = current()) persisted = u->persisted_next();
  bool ok = !segment.active && segment.next_offset <= persisted && segment.chunks > 0;
  if (!ok) vetoes_.fetch_add(1, std::memory_order_relaxed);
  return ok;
}

}  // namespace strata::tier
