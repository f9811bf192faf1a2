// What the server keeps per open stream, shared by every connection that
// publishes to or consumes from it: the node's handle to the stream, its
// append pipeline, the id of its last committed chunk (StreamStats), and the
// connections to tell when it goes away.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "node/stream_handle.h"
#include "server/delivery_limit.h"
#include "server/replica_acks.h"
#include "server/stream_appender.h"

namespace strata::server {

// A connection with publishers or subscriptions on a stream.
class StreamWatcher {
 public:
  virtual ~StreamWatcher() = default;
  // The stream is no longer served here (deleted, lost, handed over): its
  // publishers and subscriptions go, and the client is told. Any thread.
  virtual void stream_gone(const std::string& stream) = 0;
};

class ServedStream {
 public:
  // `limit`: what its consumers may read (delivery_limit.h); null: all
  // the log committed.
  // `replicas`: confirm = replicated in a cluster (also its `limit`).
  ServedStream(std::shared_ptr<node::StreamHandle> stream, std::shared_ptr<StreamAppender> appender,
               std::shared_ptr<DeliveryLimit> limit = nullptr,
               std::shared_ptr<ReplicaAcks> replicas = nullptr);
  ~ServedStream();
  ServedStream(const ServedStream&) = delete;
  ServedStream& operator=(const ServedStream&) = delete;

  const std::string& name() const { return stream_->name(); }
  const std::shared_ptr<node::StreamHandle>& stream() const { return stream_; }
  StreamAppender& appender() { return *appender_; }
  const std::shared_ptr<DeliveryLimit>& delivery_limit() const { return limit_; }
  const std::shared_ptr<ReplicaAcks>& replica_acks() const { return replicas_; }

  // First offset of the last committed chunk; -1 when the stream is empty.
  int64_t last_chunk_id() const { return last_chunk_id_.load(std::memory_order_acquire); }

  void watch(const std::shared_ptr<StreamWatcher>& w);
  std::vector<std::shared_ptr<StreamWatcher>> watchers();

  // The stream is gone: appender stopped. Idempotent.
  void retire();
  bool retired() const { return retired_.load(); }

 private:
  void on_commit(uint64_t first_offset);

  const std::shared_ptr<node::StreamHandle> stream_;
  const std::shared_ptr<StreamAppender> appender_;
  const std::shared_ptr<DeliveryLimit> limit_;
  const std::shared_ptr<ReplicaAcks> replicas_;
  uint64_t listener_ = 0;
  std::atomic<int64_t> last_chunk_id_{-1};
  std::atomic<bool> retired_{false};
  std::mutex mu_;
  std::vector<std::weak_ptr<StreamWatcher>> watchers_;
};

}  // namespace strata::server
