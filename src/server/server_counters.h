// What `strata serve` counts as it goes (its /metrics and /status): plain
// atomics, incremented by connections and feeds on any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "proto/frame.h"

namespace strata::server {

// The bytes the server holds for clients that have not read them yet: frames
// queued on connections (replies, confirms, in-memory Deliver bodies) and
// chunks deliveries have read ahead of their sends. Past `limit`
// (server.max_buffered_bytes) a connection with more than a little of its
// own unread stops being read and fed until its client catches up
// (frame_channel.h); connections with nothing waiting go on.
struct OutboundBytes {
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> limit{UINT64_MAX};
  // Times a connection stopped being read for its own unread bytes
  // (kConnectionBacklogMax), and for the server's limit.
  std::atomic<uint64_t> backlog_pauses{0};
  std::atomic<uint64_t> limit_pauses{0};

  bool over() const {
    return bytes.load(std::memory_order_relaxed) > limit.load(std::memory_order_relaxed);
  }
  void add(uint64_t n) { bytes.fetch_add(n, std::memory_order_relaxed); }
  void sub(uint64_t n) { bytes.fetch_sub(n, std::memory_order_relaxed); }
};

struct ServerCounters {
  std::atomic<uint64_t> connections_accepted{0};
  std::atomic<uint64_t> connections_open{0};
  // Connections whose Open succeeded (RabbitMQ's connections_opened_total
  // and its connections gauge count only those): ever, and open now.
  std::atomic<uint64_t> connections_opened{0};
  std::atomic<uint64_t> connections_established{0};
  std::atomic<uint64_t> publishers{0};
  std::atomic<uint64_t> consumers{0};
  std::atomic<uint64_t> messages_in{0};
  std::atomic<uint64_t> messages_confirmed{0};
  std::atomic<uint64_t> chunks_out{0};
  std::atomic<uint64_t> chunks_joined{0};  // stored chunks sent inside another's Deliver
  // Records in the chunks delivered (a first chunk's records before the
  // subscription's offset included: chunks go out whole).
  std::atomic<uint64_t> records_out{0};
  std::atomic<uint64_t> bytes_out{0};
  std::atomic<uint64_t> protocol_errors{0};
  // Logins refused (bad credentials, guest from afar), handshakes that did
  // not finish in time, and frames refused for their size.
  std::atomic<uint64_t> auth_failures{0};
  std::atomic<uint64_t> handshake_timeouts{0};
  std::atomic<uint64_t> frames_too_large{0};
  // Open connections closed because a frame begun was not completed in
  // server.partial_frame_timeout_ms.
  std::atomic<uint64_t> partial_frame_timeouts{0};
  // Connections closed because a write to their client did not end within
  // server.send_timeout_ms.
  std::atomic<uint64_t> send_timeouts{0};
  // Commands refused for want of a permission (access_policy.h).
  std::atomic<uint64_t> access_refused{0};
  // Connections refused for a limit: server.max_connections when accepted,
  // the per-user and per-vhost limits at Open.
  std::atomic<uint64_t> connections_refused_limit{0};
  // TLS: connections accepted on the TLS listener, and handshakes that
  // failed (bad certificate, wrong protocol, not finished in time).
  std::atomic<uint64_t> tls_connections{0};
  // TLS connections whose records the kernel sends (kernel TLS): their
  // deliveries go by SSL_sendfile (server/transport.h).
  std::atomic<uint64_t> tls_kernel_send{0};
  // Deliver bodies those connections sent by SSL_sendfile from the segment
  // files, in bytes: the kernel-TLS path, counted as it completes.
  std::atomic<uint64_t> tls_sendfile_bytes{0};
  std::atomic<uint64_t> tls_handshake_failures{0};
  // Replica subscriptions (replica_feed.h): chunks read from the bucket and
  // forwarded from owners, and subscriptions made at owners.
  std::atomic<uint64_t> replica_remote_chunks{0};
  std::atomic<uint64_t> replica_forwarded_chunks{0};
  std::atomic<uint64_t> replica_links{0};
  // Messages refused while the node's disk alarm was raised.
  std::atomic<uint64_t> disk_alarm_refusals{0};
  OutboundBytes outbound;

  // By protocol response code (the index; codes past the array count at 0):
  // commands answered with an error code, and PublishError frames once
  // each (RabbitMQ's stream_error_* counters); and messages refused in
  // PublishError frames.
  static constexpr size_t kCodes = 32;
  std::array<std::atomic<uint64_t>, kCodes> errors_by_code{};
  std::array<std::atomic<uint64_t>, kCodes> publish_errors_by_code{};

  static size_t code_index(proto::ResponseCode c) { return size_t(c) < kCodes ? size_t(c) : 0; }
  void count_error(proto::ResponseCode c) { errors_by_code[code_index(c)] += 1; }
  void count_publish_errors(proto::ResponseCode c, uint64_t messages) {
    errors_by_code[code_index(c)] += 1;
    publish_errors_by_code[code_index(c)] += messages;
  }
};

}  // namespace strata::server
