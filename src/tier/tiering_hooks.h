// TieringHooks: how a stream's local log lets its uploader in (the log
// knows nothing of object storage; see log/hooks.h).
//
//  - while an uploader is attached, it is subscribed to the log's commits
//    (StreamLog::subscribe), so it hears of each committed chunk;
//  - may_delete_segment keeps every segment that is not wholly below the
//    persisted remote next offset: local retention deletes only data that
//    a persisted manifest covers. Without an attached uploader nothing is
//    deleted. This is why the hooks are given to the log at open: retention
//    may run before an uploader exists.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>

#include "log/hooks.h"
#include "log/stream_log.h"

namespace strata::tier {

class Uploader;

class TieringHooks final : public log::LogHooks {
 public:
  ~TieringHooks() override;

  // Attaches the uploader (held weakly: an uploader destroyed without a
  // detach simply stops receiving commits and allows no deletion) and
  // subscribes it to the commits of `log`, the log these hooks were opened
  // with (held weakly too). An uploader attached before is detached first.
  void attach(const std::shared_ptr<Uploader>& u, const std::shared_ptr<log::StreamLog>& log);
  // Unsubscribes the attached uploader and forgets it. Idempotent.
  void detach();

  bool may_delete_segment(const log::SegmentInfo& segment) override;

  uint64_t vetoes() const { return vetoes_.load(std::memory_order_relaxed); }

 private:
  std::shared_ptr<Uploader> current();
  std::mutex mu_;
  std::weak_ptr<Uploader> uploader_;
  // The log the uploader is subscribed to, and its subscription (0: none).
  std::weak_ptr<log::StreamLog> log_;
  uint64_t subscription_ = 0;
  std::atomic<uint64_t> vetoes_{0};
};

}  // namespace strata::tier
