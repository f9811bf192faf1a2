// OpenStore: one open raftmeta store behind an Erlang handle — the RaftMeta,
// the thread that answers its store_sync callers, and the one close that
// every way out ends in (the owner's close/1, the owner's death, the
// handle's garbage collection).
//
// Calls made while or after the store closes answer Errc::closed. close()
// first answers every queued store_sync caller (a last group commit), then
// closes the RaftMeta (everything pending is fsynced, the <dir>/LOCK
// released), so a caller acknowledged before close is durable and a caller
// told `closed` was not acknowledged.
#pragma once

#include <erl_nif.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "common/fault_fs.h"
#include "common/result.h"
#include "open_options.h"
#include "raftmeta/raft_meta.h"
#include "sync_waiter.h"
#include "vote_atoms.h"

namespace strata::erl {

class OpenStore {
 public:
  // Opens (and migrates: raftmeta's open) the store of `req`. Blocks on
  // I/O: a dirty I/O scheduler only.
  static Result<std::shared_ptr<OpenStore>> open(OpenRequest req,
                                                 raftmeta::MigrationProgress progress);
  ~OpenStore();
  OpenStore(const OpenStore&) = delete;
  OpenStore& operator=(const OpenStore&) = delete;

  const std::string& dir() const { return dir_; }
  // True from the moment close() begins.
  bool closing() const { return closing_.load(std::memory_order_acquire); }
  // True once close() finished (the LOCK is released).
  bool closed() const { return closed_.load(std::memory_order_acquire); }
  // Waits, at most `limit`, until closed(); returns closed().
  bool wait_closed(std::chrono::milliseconds limit);
  // The process that opened it (set once, before the store is shared).
  const ErlNifPid& owner() const { return owner_; }
  // Also the process that sends the store_sync replies (sync_waiter.h).
  void set_owner(const ErlNifPid& pid) {
    owner_ = pid;
    waiter_->set_sender(pid);
  }
  raftmeta::RaftMeta& meta() { return *meta_; }
  SyncWaiter& waiter() { return *waiter_; }
  VoteAtoms& vote_atoms() { return *vote_atoms_; }

  // Sends {Ref, Result} to `to` once the change numbered `seq` (RaftMeta's
  // store/erase with a seq) is durable; false if the store is closing (the
  // caller answers `closed`).
  bool reply_when_durable(const ErlNifPid& to, ERL_NIF_TERM ref, uint64_t seq);
  // Tests (fault_injection stores only): every later fsync fails.
  Status fail_syncs();
  // Tests (fault_injection stores only): while `hang`, every fsync blocks
  // (a disk that stops answering); false lets them go on.
  Status hang_syncs(bool hang);

  // See the file comment. Idempotent (returns the first close's status);
  // concurrent calls wait for the first. Blocks on I/O: a dirty I/O
  // scheduler or a thread of the library only.
  Status close();

 private:
  OpenStore(std::string dir, std::unique_ptr<FaultFileSystem> fault_fs);

  const std::string dir_;
  // The file system of a fault_injection store (declared before meta_: it
  // outlives it).
  std::unique_ptr<FaultFileSystem> fault_fs_;
  std::unique_ptr<raftmeta::RaftMeta> meta_;
  std::unique_ptr<SyncWaiter> waiter_;
  std::unique_ptr<VoteAtoms> vote_atoms_;
  ErlNifPid owner_{};
  std::atomic<bool> closing_{false};
  std::atomic<bool> closed_{false};
  std::mutex close_mu_;  // held by the close that runs
  Status close_status_;
  std::mutex closed_mu_;  // guards nothing; pairs with closed_cv_
  std::condition_variable closed_cv_;
  // The faults of a fault_injection store's fsyncs (fail_syncs, hang_syncs).
  std::atomic<bool> fail_syncs_{false};
  std::mutex hang_mu_;
  std::condition_variable hang_cv_;
  bool hang_syncs_ = false;
};

}  // namespace strata::erl
