#include "open_store.h"

#include <spdlog/spdlog.h>

#include "common/fs.h"
#include "term_codec.h"

namespace strata::erl {

OpenStore::OpenStore(std::string dir, std::unique_ptr<FaultFileSystem> fault_fs)
    : dir_(std::move(dir)), fault_fs_(std::move(fault_fs)) {}

Result<std::shared_ptr<OpenStore>> OpenStore::open(OpenRequest req,
                                                   raftmeta::MigrationProgress progress) {
  std::unique_ptr<FaultFileSystem> fault_fs;
  if (req.fault_injection) fault_fs = std::make_unique<FaultFileSystem>();
  FileSystem& fs = fault_fs ? static_cast<FileSystem&>(*fault_fs) : posix_fs();
  req.options.migration_progress = std::move(progress);
  STRATA_ASSIGN_OR_RETURN(auto meta, raftmeta::RaftMeta::open(fs, req.dir, req.options));
  std::shared_ptr<OpenStore> s(new OpenStore(req.dir, std::move(fault_fs)));
  if (s->fault_fs_) {
    // Set once, before any fault: replacing it later would take the file
    // system's lock, which an fsync hanging in it holds.
    OpenStore* self = s.get();
    s->fault_fs_->fail_when([self](const FaultOp& op) {
      if (op.kind != FaultOp::Kind::sync && op.kind != FaultOp::Kind::sync_dir) return false;
      std::unique_lock<std::mutex> l(self->hang_mu_);
      self->hang_cv_.wait(l, [self] { return !self->hang_syncs_; });
      return self->fail_syncs_.load();
    });
  }
  s->meta_ = std::move(meta);
  raftmeta::RaftMeta* m = s->meta_.get();
  const raftmeta::Stats st = m->stats();
  s->vote_atoms_ = std::make_unique<VoteAtoms>(st.capacity, st.node_capacity);
  const std::string dir = s->dir_;
  s->waiter_ = std::make_unique<SyncWaiter>(
      [m](uint64_t want, raftmeta::DurableProgress* p, SyncWaiter::Clock::time_point deadline) {
        return m->await_progress(want, p, deadline);
      },
      [dir](ErlNifEnv* env, const Error& e) { return encode_error(env, e, dir); },
      req.sync_timeout);
  return s;
}

OpenStore::~OpenStore() {
  Status s = close();
  if (!s.ok()) spdlog::warn("strata_ra_nif {}: close: {}", dir_, s.to_string());
}

bool OpenStore::reply_when_durable(const ErlNifPid& to, ERL_NIF_TERM ref, uint64_t seq) {
  if (closing()) return false;
  return waiter_->enqueue(to, ref, seq);
}

Status OpenStore::fail_syncs() {
  if (!fault_fs_) {
    return Error(Errc::invalid_argument,
                 "inject_sync_failure needs a store opened with fault_injection => true");
  }
  fail_syncs_ = true;
  return Status::OK();
}

Status OpenStore::hang_syncs(bool hang) {
  if (!fault_fs_) {
    return Error(Errc::invalid_argument,
                 "inject_sync_hang needs a store opened with fault_injection => true");
  }
  {
    std::lock_guard<std::mutex> l(hang_mu_);
    hang_syncs_ = hang;
  }
  hang_cv_.notify_all();
  return Status::OK();
}

Status OpenStore::close() {
  std::lock_guard<std::mutex> l(close_mu_);
  if (closed()) return close_status_;
  closing_.store(true, std::memory_order_release);
  // Callers already queued get their group commit before the store stops.
  if (waiter_) waiter_->stop();
  if (meta_) close_status_ = meta_->close();
  {
    std::lock_guard<std::mutex> cl(closed_mu_);
    closed_.store(true, std::memory_order_release);
  }
  closed_cv_.notify_all();
  return close_status_;
}

bool OpenStore::wait_closed(std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> l(closed_mu_);
  return closed_cv_.wait_for(l, limit, [&] { return closed(); });
}

}  // namespace strata::erl
