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
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/task.h"
#include "node/stream_handle.h"
#include "proto/commands.h"

namespace strata::server {

class ReplicaAcks;

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
  // Under heavy publishing — a drain started less than `linger` ago and
  // messages arriving since at `linger_min_rate` per second or more — the
  // next drain waits up to `linger`, or until `linger_bytes` are queued,
  // so that each stored chunk holds more messages: consumers pay per chunk
  // (a credit, a callback), and a log that appends as fast as `fsync =
  // never` lets it would store a chunk per Publish frame. Below that rate
  // (a publisher that sends now and then, or a paced one whose confirm
  // latency matters more than chunk size) frames are appended at once.
  // 0: no linger.
  std::chrono::microseconds linger{0};
  uint64_t linger_bytes = 1u << 20;
  uint64_t linger_min_rate = 50'000;
  // confirm = replicated in a cluster (replica_acks.h): a batch is
  // confirmed once the copies hold it, waited for as a remote confirm is
  // (same deadline). Null: replicated confirms as local (a single node).
  std::shared_ptr<ReplicaAcks> replicas;
};

class StreamAppender {
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
  node::ConfirmMode confirm() const;

 private:
  struct Impl;  // stream_appender.cpp: the queue, the drain, the remote waits
  std::shared_ptr<Impl> impl_;
};

}  // namespace strata::server
