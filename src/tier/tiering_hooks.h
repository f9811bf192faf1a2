// TieringHooks: how a stream's local log lets its uploader in (the log
// knows nothing of object storage; see log/hooks.h).
//
//  - on_commit passes each committed chunk's location to the uploader;
//  - may_delete_segment keeps every segment that is not wholly below the
//    persisted remote next offset: local retention deletes only data that
//    a persisted manifest covers. Without an attached uploader nothing is
//    deleted.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>

#include "log/hooks.h"

namespace strata::tier {

class Uploader;

class TieringHooks final : public log::LogHooks {
 public:
  // Attaches the uploader (held weakly: an uploader destroyed without a
  // detach simply stops receiving commits and allows no deletion).
  void attach(const std::shared_ptr<Uploader>& u);
  void detach();

  void on_commit(const log::CommittedChunk& chunk) override;
  bool may_delete_segment(const log::SegmentInfo& segment) override;

  uint64_t vetoes() const { return vetoes_.load(std::memory_order_relaxed); }

 private:
  std::shared_ptr<Uploader> current();
  std::mutex mu_;
  std::weak_ptr<Uploader> uploader_;
  std::atomic<uint64_t> vetoes_{0};
};

}  // namespace strata::tier
