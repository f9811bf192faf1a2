// ReplicaCopier: this node's copy of the unuploaded tail of one stream
// another node owns (cluster.replica_copies) — the owner's chunks, whole,
// appended to a copy log in the directory an owner's log would use
// (node::Node::open_copy, log::StreamLog::append_copy), so that a takeover
// on this node keeps them (docs/ARCHITECTURE.md, "Stream ownership").
//
// How it runs, on its own strand, each blocking step a pool task:
//  - prepare: read where the remote tier ends (R); open the copy, created
//    at R when there is none. A copy that ends at or below R, or starts
//    above it, holds nothing the bucket lacks (or leaves a gap): it is
//    dropped and created again at R. Else the copier asks for the owner's
//    chunk at the first offset of the copy's last chunk, to check that the
//    copy lines up with the owner's log. An owner whose log ends at or
//    before that offset refuses (the copy's tail is another tenure's,
//    server_limits.h kCopyHoldsProperty): the copy is dropped at once.
//  - copy: one OwnerLink copy subscription (owner_link.h, `copy`) from
//    there; the first chunk must be the copy's last one (offsets, epoch,
//    time, data CRC) or the copy is dropped and prepared again; every
//    later one is appended as it comes, at most `credit` chunks in flight,
//    in one append task at a time. The copy's chunks are thereby always a
//    prefix of one owner's log.
//  - trim: every `trim_every`, segments wholly below the remote tier's end
//    are deleted (log retention, vetoed above it).
//  - the owner changes (the link ends, or the cluster's view names another
//    owner): prepared again after `first_retry` — a restarted or new owner
//    is copied, and a replicated confirm acknowledged, within tens of ms —
//    doubling up to `retry` while attempts keep failing (reset by a chunk
//    appended). A copy closed under it (this
//    node acquired the stream) or a stream gone ends the copier; the set
//    (ReplicaCopies) starts and stops copiers as the view changes.
#pragma once

#include <asio/steady_timer.hpp>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/task.h"
#include "log/stream_log.h"
#include "node/node.h"
#include "server/owner_link.h"
#include "server/replica_feed.h"

namespace strata::server {

struct CopierEnv {
  ReplicaEnv replica;  // the stream, its remote tier, its owner, the login
  node::Node* node = nullptr;
  std::string self_id;  // this node: a copier never copies from itself
  uint16_t credit = 32;
  std::chrono::milliseconds first_retry{50};
  std::chrono::milliseconds retry{500};
  std::chrono::milliseconds trim_every{5000};
  std::chrono::milliseconds task_deadline{60'000};
  // Counted as they happen (the server's metrics); may be null.
  std::atomic<uint64_t>* copied_chunks = nullptr;
  std::atomic<uint64_t>* dropped_copies = nullptr;
};

class ReplicaCopier : public std::enable_shared_from_this<ReplicaCopier> {
 public:
  static std::shared_ptr<ReplicaCopier> start(CopierEnv env, Strand strand, TaskContext tasks);
  ~ReplicaCopier();
  // Ends the link and the timers; an append in flight finishes. Idempotent.
  void stop();
  bool stopped() const { return stopped_.load(); }
  const std::string& stream() const { return env_.replica.stream; }

  struct Trim;

 private:
  ReplicaCopier(CopierEnv env, Strand strand, TaskContext tasks);
  void prepare(bool drop);
  void connect(uint64_t from);
  void on_chunk(const proto::DeliverFrame& f);
  void pump();
  void restart(const Error& why, bool drop);
  void end(const Error& why);
  void check_owner();
  void trim();

  CopierEnv env_;
  Strand strand_;
  TaskContext tasks_;
  std::shared_ptr<Trim> trim_hooks_;
  std::shared_ptr<log::StreamLog> copy_;
  std::shared_ptr<OwnerLink> link_;
  std::string linked_node_;
  // The copy's last chunk's header while the owner's chunk at its offset
  // has not come yet (prepare → first chunk).
  std::optional<log::ChunkHeader> expect_;
  std::vector<Bytes> queued_;  // stored chunks waiting for the append task
  bool appending_ = false;
  uint64_t generation_ = 0;  // bumped by every restart: stale results dropped
  asio::steady_timer retry_timer_;
  std::chrono::milliseconds next_retry_;  // first_retry, doubled per failed attempt
  asio::steady_timer owner_timer_;
  asio::steady_timer trim_timer_;
  std::atomic<bool> stopped_{false};
};

}  // namespace strata::server
