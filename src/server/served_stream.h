// What the server keeps per open stream, shared by every connection that
// publishes to or consumes from it: the log, its append pipeline, the id of
// its last committed chunk (StreamStats), and the connections to tell when
// it goes away.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "log/stream_log.h"
#include "server/delivery_limit.h"
#include "server/stream_appender.h"

namespace strata::server {

class Connection;

class ServedStream {
 public:
  // `limit`: what its consumers may read (delivery_limit.h); null: all
  // the log committed.
  ServedStream(std::string name, std::shared_ptr<log::StreamLog> log,
               std::shared_ptr<StreamAppender> appender,
               std::shared_ptr<DeliveryLimit> limit = nullptr);
  ~ServedStream();

  const std::string& name() const { return name_; }
  const std::shared_ptr<log::StreamLog>& log() const { return log_; }
  StreamAppender& appender() { return *appender_; }
  const std::shared_ptr<DeliveryLimit>& delivery_limit() const { return limit_; }

  // First offset of the last committed chunk; -1 when the stream is empty.
  int64_t last_chunk_id() const { return last_chunk_id_.load(std::memory_order_acquire); }

  // Connections with publishers or subscriptions on this stream.
  void watch(const std::shared_ptr<Connection>& c);
  std::vector<std::shared_ptr<Connection>> watchers();

  // The stream is gone: appender stopped. Idempotent.
  void retire();
  bool retired() const { return retired_.load(); }

 private:
  void on_commit(uint64_t first_offset);

  const std::string name_;
  const std::shared_ptr<log::StreamLog> log_;
  const std::shared_ptr<StreamAppender> appender_;
  const std::shared_ptr<DeliveryLimit> limit_;
  uint64_t listener_ = 0;
  std::atomic<int64_t> last_chunk_id_{-1};
  std::atomic<bool> retired_{false};
  std::mutex mu_;
  std::vector<std::weak_ptr<Connection>> watchers_;
};

}  // namespace strata::server
