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
  s->meta_ = std::move(meta);
  raftmeta::RaftMeta* m = s->meta_.get();
  const raftmeta::Stats st = m->stats();
  s->vote_atoms_ = std::make_unique<VoteAtoms>(st.capacity, st.node_capacity);
  const std::string dir = s->dir_;
  s->waiter_ = std::make_unique<SyncWaiter>(
      [m](uint64_t want, raftmeta::DurableProgress* p) { return m->await_progress(want, p); },
      [dir](ErlNifEnv* env, const Error& e) { return encode_error(env, e, dir); });
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
  fault_fs_->fail_when([](const FaultOp& op) {
    return op.kind == FaultOp::Kind::sync || op.kind == FaultOp::Kind::sync_dir;
  });
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
