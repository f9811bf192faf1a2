// StreamAppender: one stream's append pipeline. Publishers of every
// connection hand it the entries of their Publish frames; it drops
// duplicates (a publishing id at or below the highest one already accepted
// for the publisher's reference — confirmed anyway, as RabbitMQ does),
// queues the rest, and one task at a time on the node's blocking pool
// appends everything queued, merging consecutive batches of the same writer
// into one chunk. Each submitter then learns the outcome of its batch, in
// submission order — so a publisher's confirms come in order.
//
// The log call blocks (write, fsync): it never runs on the event loop. The
// drain task ends in exactly one event (common/task.h); one that misses its
// deadline stops the appender (what it did is unknown, so nothing after it
// may be confirmed), and every later batch fails.
//
// Confirm modes (AppenderOptions.confirm, from the node's
// tiering.confirm; node/node_config.h). `local`: a batch's outcome is told
// once its log append returns. `remote`: a batch that was appended is
// confirmed only once a persisted manifest covers it as well — each drain
// waits on the stream's uploader (tier/uploader.h, await_remote) under a
// deadline (remote_confirm_timeout_ms) and is released in drain order
// (server/remote_confirms.h). A wait that fails or misses its deadline
// answers the drain's batches with stream_not_available: the messages are
// in the local log and may still be uploaded, so a publisher republishing
// them under the same reference gets them deduplicated.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/task.h"
#include "node/stream_handle.h"
#include "proto/commands.h"
#include "server/remote_confirms.h"

namespace strata::server {

// Who learns about a batch's outcome (a connection).
class PublishSink {
 public:
  virtual ~PublishSink() = default;
  // `ids`: every publishing id of the batch (duplicates included); `code`
  // ok or the error for all of them; `bytes` as given to submit.
  virtual void on_appended(uint8_t publisher_id, std::vector<uint64_t> ids,
                           proto::ResponseCode code, uint64_t bytes) = 0;
};

struct AppenderStats {
  uint64_t batches = 0;     // submitted
  uint64_t appends = 0;     // log appends (chunks)
  uint64_t messages = 0;    // entries appended
  uint64_t duplicates = 0;  // publishing ids dropped as already stored
  uint64_t failed = 0;      // batches that failed
  // confirm = remote
  uint64_t remote_waits = 0;    // waits started on the uploader
  uint64_t remote_failed = 0;   // batches answered with an error by the remote wait
  uint64_t remote_pending = 0;  // drains appended, waiting to be remote (gauge)
};

struct AppenderOptions {
  int64_t remote_timeout_ms = 30'000;
};

class StreamAppender : public std::enable_shared_from_this<StreamAppender> {
 public:
  // The confirm mode is the stream's (node::StreamHandle::confirm); a
  // stream with `remote` that is not tiered fails every batch.
  StreamAppender(std::shared_ptr<node::StreamHandle> stream, asio::io_context& io,
                 TaskContext tasks, AppenderOptions opts = {});

  // Queues one Publish frame's messages of one publisher. `ref` empty: no
  // deduplication.
  void submit(std::weak_ptr<PublishSink> sink, uint8_t publisher_id, const std::string& ref,
              const std::vector<proto::PublishedMessage>& messages, uint64_t bytes);
  // The highest publishing id stored (or queued) for `ref`; nullopt: none.
  std::optional<uint64_t> sequence(const std::string& ref);
  // Fails everything queued and every later submit with `code`
  // (stream deleted, server stopping). Idempotent.
  void stop(proto::ResponseCode code);
  // Returns once nothing is queued, running or waiting to be remote (or
  // the timeout passes).
  bool wait_idle(std::chrono::milliseconds timeout);
  AppenderStats stats() const;
  node::ConfirmMode confirm() const { return stream_->confirm(); }

 private:
  struct Item {
    std::weak_ptr<PublishSink> sink;
    uint8_t publisher_id = 0;
    std::string ref;
    Bytes entries;  // osiris entries back to back
    uint16_t num_entries = 0;
    uint32_t num_records = 0;
    uint64_t max_seq = 0;
    std::vector<uint64_t> ids;
    uint64_t bytes = 0;
    proto::ResponseCode code = proto::ResponseCode::ok;
  };
  void start_locked();
  static void append_all(node::StreamHandle& stream, std::vector<Item>& items,
                         AppenderStats* stats);
  void finish(std::vector<Item> items, uint64_t through);
  static void notify(std::vector<Item>& items);
  // confirm = remote, on strand_: a drain waits to be remote.
  void hold_remote(std::vector<Item> items, uint64_t through);
  void start_wait(uint64_t through);
  void release_remote();
  void arm_remote_timer();

  const std::shared_ptr<node::StreamHandle> stream_;
  Strand strand_;
  TaskContext tasks_;
  const AppenderOptions opts_;
  // confirm = remote (strand_ only).
  RemoteConfirms remote_;
  std::map<uint64_t, std::vector<Item>> held_;  // by group
  uint64_t next_group_ = 1;
  asio::steady_timer remote_timer_;
  std::optional<int64_t> remote_timer_at_;
  mutable std::mutex mu_;
  std::condition_variable idle_cv_;
  std::deque<Item> queue_;
  std::map<std::string, uint64_t> seqs_;  // highest accepted publishing id per reference
  bool running_ = false;
  bool stopped_ = false;
  proto::ResponseCode stop_code_ = proto::ResponseCode::ok;
  AppenderStats stats_;
};

}  // namespace strata::server
