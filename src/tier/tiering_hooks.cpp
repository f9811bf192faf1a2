#include "tier/tiering_hooks.h"

#include "tier/uploader.h"

namespace strata::tier {

void TieringHooks::attach(const std::shared_ptr<Uploader>& u) {
  std::lock_guard l(mu_);
  uploader_ = u;
}

void TieringHooks::detach() {
  std::lock_guard l(mu_);
  uploader_.reset();
}

std::shared_ptr<Uploader> TieringHooks::current() {
  std::lock_guard l(mu_);
  return uploader_.lock();
}

void TieringHooks::on_commit(const log::CommittedChunk& chunk) {
  if (auto u = current()) u->on_commit(chunk);
}

bool TieringHooks::may_delete_segment(const log::SegmentInfo& segment) {
  uint64_t persisted = 0;
  if (auto u = current()) persisted = u->persisted_next();
  bool ok = !segment.active && segment.next_offset <= persisted && segment.chunks > 0;
  if (!ok) vetoes_.fetch_add(1, std::memory_order_relaxed);
  return ok;
}

}  // namespace strata::tier
