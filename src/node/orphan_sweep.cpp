#include "node/orphan_sweep.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <asio/post.hpp>

#include "common/clock.h"
#include "tier/gc_run.h"

namespace strata::node {

OrphanSweep::OrphanSweep(std::shared_ptr<asio::io_context> io, TaskContext tasks,
                         std::shared_ptr<objstore::ObjectStore> store,
                         std::shared_ptr<catalog::Catalog> catalog, OrphanSweepOptions opts)
    : io_(std::move(io)),
      tasks_(std::move(tasks)),
      store_(std::move(store)),
      catalog_(std::move(catalog)),
      opts_(std::move(opts)),
      strand_(asio::make_strand(*io_)),
      timer_(strand_) {}

void OrphanSweep::start() {
  asio::post(strand_, [self = shared_from_this()] { self->arm(self->opts_.grace_ms); });
}

void OrphanSweep::stop() {
  stopped_.store(true, std::memory_order_release);
  asio::post(strand_, [self = shared_from_this()] { self->timer_.cancel(); });
}

OrphanSweepStats OrphanSweep::stats() const {
  std::lock_guard l(mu_);
  return stats_;
}

void OrphanSweep::arm(int64_t delay_ms) {
  if (stopped_.load(std::memory_order_acquire)) return;
  timer_.expires_after(std::chrono::milliseconds(delay_ms));
  timer_.async_wait([self = shared_from_this()](const std::error_code& ec) {
    if (!ec) self->run();
  });
}

void OrphanSweep::run() {
  if (stopped_.load(std::memory_order_acquire)) return;
  tier::GcOptions o;
  o.prefix = opts_.prefix;
  o.grace_ms = opts_.grace_ms;
  o.max_deletes = opts_.max_deletes;
  run_task<Result<tier::GcResult>>(
      tasks_, strand_, std::chrono::milliseconds(opts_.deadline_ms),
      "deleting orphaned objects under " + opts_.prefix + "/",
      [store = store_, catalog = catalog_, o] {
        return tier::run_gc(*store, tier::CatalogSource::live(*catalog), o);
      },
      [self = shared_from_this()](TaskOutcome<Result<tier::GcResult>> out) {
        Error error;
        bool ok = false;
        if (out.end != TaskEnd::completed) {
          error = out.error;
        } else if (!out.value->ok()) {
          error = out.value->error();
        } else {
          ok = true;
        }
        {
          std::lock_guard l(self->mu_);
          self->stats_.last_run_ms = system_clock().now_ms();
          if (!ok) {
            self->stats_.failed_runs += 1;
            self->stats_.last_error = error.to_string();
          } else {
            const tier::GcResult& r = **out.value;
            uint64_t bytes = 0;
            for (const auto& d : r.deleted) bytes += d.size;
            self->stats_.runs += 1;
            self->stats_.deleted += r.deleted.size();
            self->stats_.deleted_bytes += bytes;
            self->stats_.delete_failures += r.failed.size();
            self->stats_.left = r.left;
            if (!r.deleted.empty() || !r.failed.empty() || r.left > 0) {
              spdlog::info(
                  "orphans: deleted {} object(s) ({} bytes) no manifest references, of {} listed "
                  "under {}/; {} delete(s) failed, {} left for the next run",
                  r.deleted.size(), bytes, r.listed, self->opts_.prefix, r.failed.size(), r.left);
            }
          }
        }
        if (!ok)
          spdlog::warn("orphans: the cleanup run failed (retried later): {}", error.to_string());
        self->arm(self->opts_.interval_ms);
      });
}

}  // namespace strata::node
