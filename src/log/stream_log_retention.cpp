// The retention shell: deletes the segments the plan (retention.h) names,
// oldest first, unless a hook vetoes.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/assert.h"
#include "log/retention.h"
#include "log/stream_log_impl.h"

namespace strata::log {

RetentionOptions StreamLog::Impl::retention() const {
  std::lock_guard<std::mutex> g(limits_mu_);
  return limits_;
}

void StreamLog::Impl::set_retention(const RetentionOptions& r) {
  std::lock_guard<std::mutex> g(limits_mu_);
  limits_ = r;
}

Result<RetentionOutcome> StreamLog::Impl::apply_retention() {
  if (opts_.read_only) {
    return Error(Errc::invalid_argument, fmt::format("stream {} is open read-only", dir_));
  }
  std::lock_guard<std::mutex> rl(retention_mu_);
  std::vector<SegmentInfo> infos = segments();
  RetentionOutcome out;
  RetentionPlan plan = plan_retention(infos, retention(), clock_.now_ms());
  for (size_t i = 0; i < plan.count; ++i) {
    if (opts_.hooks && !opts_.hooks->may_delete_segment(infos[i])) {
      out.vetoed = true;
      break;
    }
    std::shared_ptr<LogSegment> seg;
    {
      std::lock_guard<std::mutex> g(mu_);
      if (closed_) break;
      seg = segments_.front();
      STRATA_ASSERT(seg->info.first_offset == infos[i].first_offset && segments_.size() > 1,
                    "retention raced with another change of the segment list");
      // Out of the list first, so no new reader resolves into it; readers
      // already in it keep their open handle.
      segments_.pop_front();
    }
    Status s = fs_.remove(seg->path);
    if (s.ok()) {
      Status si = fs_.remove(seg->index_path);
      if (!si.ok() && si.code() != Errc::not_found) s = si;
    }
    if (!s.ok()) {
      if (!out.deleted.empty()) (void)fs_.sync_dir(dir_);
      return std::move(s).error().with_context(fmt::format("stream {}: retention", dir_));
    }
    spdlog::info("stream {}: retention ({}) deleted segment {} (offsets {}..{}, {} bytes)", dir_,
                 plan.reasons[i], seg->path, infos[i].first_offset, infos[i].next_offset,
                 infos[i].size_bytes);
    out.bytes_deleted += infos[i].size_bytes;
    out.deleted.push_back(infos[i]);
  }
  if (!out.deleted.empty()) STRATA_TRY(fs_.sync_dir(dir_));
  out.first_offset = first_offset();
  return out;
}

}  // namespace strata::log
