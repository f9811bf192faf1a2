// The publishers and consumers of a `strata perf` run. Each owns one
// connection and runs on the run's single-threaded io_context; they count
// into the shared RunStats (no locks: one thread).
//
// Message body (>= 16 bytes): uint64 send time (steady clock, ns), uint64
// run id, then filler. The run id tells this run's messages from older ones
// in the stream, so publish-to-deliver latency and "consumed" count only
// what this run sent.
#pragma once

#include <asio.hpp>
#include <chrono>
#include <memory>
#include <vector>

#include "perf/connection.h"
#include "perf/histogram.h"
#include "perf/options.h"

namespace strata::perf {

using Clock = std::chrono::steady_clock;
inline uint64_t now_ns() {
  return uint64_t(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
          .count());
}

constexpr uint32_t kBodyHeader = 16;

struct RunStats {
  uint64_t published = 0;
  uint64_t published_bytes = 0;
  uint64_t confirmed = 0;
  uint64_t publish_errors = 0;
  uint64_t consumed = 0;      // this run's messages, all consumers
  uint64_t consumed_all = 0;  // every record delivered at or after the start offset
  uint64_t consumed_bytes = 0;
  uint64_t chunk_bytes = 0;  // Deliver frames' chunks as received (header, filter, data)
  uint64_t chunks = 0;
  uint64_t crc_errors = 0;
  uint64_t gaps = 0;
  uint64_t last_confirm_ns = 0;
  uint64_t last_consume_ns = 0;
  LogHistogram confirm_latency_ns, deliver_latency_ns;
  // Since the last progress line.
  LogHistogram interval_confirm_ns, interval_deliver_ns;
  std::vector<std::string> errors;
};

class Producer {
 public:
  // `quota`: messages to publish (0 = until stop()); `rate`: messages/s for
  // this producer (0 = unlimited).
  Producer(asio::io_context& io, RunStats& stats, const PerfOptions& o, int index, uint64_t run_id,
           uint64_t quota, double rate);
  Status setup();
  void start(uint64_t t0_ns);
  void stop() { stopped_ = true; }
  bool finished_publishing() const { return stopped_ || (quota_ && sent_msgs_ >= quota_); }
  bool idle() const { return finished_publishing() && in_flight_ == 0; }
  void close() { conn_.close(); }

 private:
  void pump();
  void publish_batch(uint32_t entries);
  void on_frame(const proto::ServerFrame& f);
  uint32_t msgs_per_entry() const { return o_.sub_entry_size ? o_.sub_entry_size : 1; }

  Connection conn_;
  asio::steady_timer timer_;
  RunStats& stats_;
  const PerfOptions& o_;
  int index_;
  uint64_t run_id_;
  uint64_t quota_;
  double rate_;
  uint8_t publisher_id_ = 0;
  uint32_t max_entries_per_frame_ = 1;
  uint64_t t0_ns_ = 0;
  uint64_t next_id_ = 1;
  uint64_t frames_published_ = 0;  // for the filter value of the next frame
  uint64_t sent_msgs_ = 0;
  uint64_t in_flight_ = 0;
  bool stopped_ = false;
  bool timer_armed_ = false;
  // Send time of each unconfirmed publishing id, by id modulo the size.
  std::vector<uint64_t> sent_ns_;
};

class Consumer {
 public:
  Consumer(asio::io_context& io, RunStats& stats, const PerfOptions& o, int index, uint64_t run_id);
  Status setup();
  // Subscribes; subscribed() turns true when the server agrees.
  void start();
  bool subscribed() const { return subscribed_; }
  // Messages of this run (recognised by the run id in their body).
  uint64_t consumed() const { return consumed_; }
  // Every message read at or after the requested offset, whoever wrote it.
  uint64_t consumed_any() const { return consumed_any_; }
  void close() { conn_.close(); }

 private:
  void on_frame(const proto::ServerFrame& f);
  void on_chunk(BytesView chunk);
  void on_record(uint64_t offset, BytesView body, uint64_t now);

  Connection conn_;
  RunStats& stats_;
  const PerfOptions& o_;
  int index_;
  uint64_t run_id_;
  bool subscribed_ = false;
  uint64_t consumed_ = 0;
  uint64_t consumed_any_ = 0;
  bool have_next_ = false;
  uint64_t next_offset_ = 0;
};

}  // namespace strata::perf
