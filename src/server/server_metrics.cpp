#include "server/server_metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>
#include <vector>

#include "common/metrics.h"
#include "common/stream_name.h"
#include "common/version.h"

namespace strata::server {

using proto::ResponseCode;

namespace {

#ifdef __clang__
constexpr const char* kCompiler = "clang " __clang_version__;
#else
constexpr const char* kCompiler = "gcc " __VERSION__;
#endif

// The codes an answer may carry, with the name RabbitMQ's stream plugin
// gives its counter (rabbitmq_global_stream_error_<name>_total; codes 2 to
// 18) and strata's reason label. Codes 19..21 RabbitMQ does not count.
struct CodeName {
  ResponseCode code;
  std::string_view reason;
  bool rabbitmq;  // RabbitMQ has a stream_error_ counter for it
};
constexpr CodeName kCodes[] = {
    {ResponseCode::stream_does_not_exist, "stream_does_not_exist", true},
    {ResponseCode::subscription_id_already_exists, "subscription_id_already_exists", true},
    {ResponseCode::subscription_id_does_not_exist, "subscription_id_does_not_exist", true},
    {ResponseCode::stream_already_exists, "stream_already_exists", true},
    {ResponseCode::stream_not_available, "stream_not_available", true},
    {ResponseCode::sasl_mechanism_not_supported, "sasl_mechanism_not_supported", true},
    {ResponseCode::authentication_failure, "authentication_failure", true},
    {ResponseCode::sasl_error, "sasl_error", true},
    {ResponseCode::sasl_challenge, "sasl_challenge", true},
    {ResponseCode::sasl_authentication_failure_loopback, "sasl_authentication_failure_loopback",
     true},
    {ResponseCode::virtual_host_access_failure, "vhost_access_failure", true},
    {ResponseCode::unknown_frame, "unknown_frame", true},
    {ResponseCode::frame_too_large, "frame_too_large", true},
    {ResponseCode::internal_error, "internal_error", true},
    {ResponseCode::access_refused, "access_refused", true},
    {ResponseCode::precondition_failed, "precondition_failed", true},
    {ResponseCode::publisher_does_not_exist, "publisher_does_not_exist", true},
    {ResponseCode::no_offset, "no_offset", false},
    {ResponseCode::sasl_cannot_change_mechanism, "sasl_cannot_change_mechanism", false},
    {ResponseCode::sasl_cannot_change_username, "sasl_cannot_change_username", false},
};

// The codes a PublishError can carry here (stream_appender.cpp,
// publisher_room.cpp): always shown, so a rate over them starts at 0.
bool publish_code(ResponseCode c) {
  return c == ResponseCode::stream_not_available || c == ResponseCode::internal_error ||
         c == ResponseCode::precondition_failed || c == ResponseCode::publisher_does_not_exist;
}

void write_errors(PromWriter& w, const ServerCounters& c) {
  for (const auto& k : kCodes) {
    const size_t i = ServerCounters::code_index(k.code);
    const Labels l{{"code", std::to_string(int(k.code))}, {"reason", std::string(k.reason)}};
    w.counter("strata_server_errors_total",
              "Commands answered with an error code, and PublishError frames, by code", l,
              double(c.errors_by_code[i].load()));
    const uint64_t refused = c.publish_errors_by_code[i].load();
    if (publish_code(k.code) || refused != 0) {
      w.counter("strata_server_publish_errors_total",
                "Messages refused in PublishError frames, by code", l, double(refused));
    }
  }
}

// The largest consumer group lags, at most `limit` series (a bounded label
// set: clients name their groups), and how many were left out.
void write_group_lags(PromWriter& w, const std::map<std::string, StreamClients>& clients,
                      uint32_t limit) {
  struct GroupLag {
    const std::string* stream;
    const std::string* group;
    uint64_t lag;
  };
  std::vector<GroupLag> all;
  for (const auto& [stream, c] : clients) {
    for (const auto& [group, lag] : c.group_lag) all.push_back({&stream, &group, lag});
  }
  const size_t shown = std::min<size_t>(all.size(), limit);
  std::partial_sort(all.begin(), all.begin() + ptrdiff_t(shown), all.end(),
                    [](const GroupLag& a, const GroupLag& b) {
                      if (a.lag != b.lag) return a.lag > b.lag;
                      if (*a.stream != *b.stream) return *a.stream < *b.stream;
                      return *a.group < *b.group;
                    });
  for (size_t i = 0; i < shown; ++i) {
    w.gauge(
        "strata_consumer_group_offset_lag",
        "The largest offset_lag of a named consumer group's consumers on this node, for the "
        "groups with the largest lags (server.consumer_group_metrics)",
        [&] {
          Labels l = stream_labels(*all[i].stream);
          l.emplace_back("group", *all[i].group);
          return l;
        }(),
        double(all[i].lag));
  }
  w.gauge("strata_consumer_group_series_omitted",
          "Consumer groups with consumers here left out of strata_consumer_group_offset_lag by "
          "server.consumer_group_metrics",
          {}, double(all.size() - shown));
}

// rabbitmq_prometheus's names for what strata counts the same way
// (docs/METRICS.md, "RabbitMQ's names").
void write_rabbitmq_names(PromWriter& w, const ServerCounters& c,
                          const std::map<std::string, StreamClients>& clients,
                          const node::DiskWatchSnapshot& disk) {
  const Labels stream{{"protocol", "stream"}};
  w.counter("rabbitmq_global_messages_received_total",
            "Messages received from publishers (strata_server_messages_in_total)", stream,
            double(c.messages_in.load()));
  // Every stream publish expects a confirm.
  w.counter("rabbitmq_global_messages_received_confirm_total",
            "Messages received from publishers expecting confirmations", stream,
            double(c.messages_in.load()));
  w.counter("rabbitmq_global_messages_confirmed_total",
            "Messages confirmed to publishers (strata_server_messages_confirmed_total)", stream,
            double(c.messages_confirmed.load()));
  w.gauge("rabbitmq_global_publishers", "Current publishers (strata_server_publishers)", stream,
          double(c.publishers.load()));
  w.gauge("rabbitmq_global_consumers", "Current consumers (strata_server_consumers)", stream,
          double(c.consumers.load()));
  const Labels delivered{{"protocol", "stream"}, {"queue_type", "rabbit_stream_queue"}};
  w.counter("rabbitmq_global_messages_delivered_total",
            "Messages delivered to consumers (strata_server_messages_out_total)", delivered,
            double(c.records_out.load()));
  for (const auto& k : kCodes) {
    if (!k.rabbitmq) continue;
    const std::string name = fmt::format("rabbitmq_global_stream_error_{}_total", k.reason);
    w.counter(name, "Commands failed with this code (strata_server_errors_total)", stream,
              double(c.errors_by_code[ServerCounters::code_index(k.code)].load()));
  }
  // As RabbitMQ counts them (measured on 3.10.8): a connection is opened,
  // and among the open ones, once its Open succeeded; every connection
  // accepted counts as closed when it closes, opened or not.
  w.gauge("rabbitmq_connections", "Connections opened and still open", {},
          double(c.connections_established.load()));
  const uint64_t accepted = c.connections_accepted.load();
  const uint64_t open = c.connections_open.load();
  w.counter("rabbitmq_connections_opened_total", "Connections whose Open succeeded", {},
            double(c.connections_opened.load()));
  w.counter("rabbitmq_connections_closed_total", "Connections closed, opened or not", {},
            double(accepted > open ? accepted - open : 0));
  uint64_t max_lag = 0;
  for (const auto& [name, s] : clients) {
    max_lag = std::max(max_lag, s.max_lag);
    w.gauge("rabbitmq_detailed_stream_consumer_max_offset_lag",
            "Highest consumer offset lag of the stream on this node "
            "(strata_stream_consumer_max_offset_lag)",
            {{"vhost", std::string(split_stream_name(name).vhost)},
             {"queue", std::string(split_stream_name(name).name)}},
            double(s.max_lag));
  }
  w.gauge("rabbitmq_stream_consumer_max_offset_lag",
          "Highest consumer offset lag over the streams of this node", {}, double(max_lag));
  // The disk alarm as rabbitmq_prometheus shows its own (untyped there).
  w.untyped("rabbitmq_alarms_free_disk_space_watermark",
            "1 while the disk alarm refuses publishing (strata_node_disk_alarm)", {},
            disk.alarm ? 1 : 0);
  if (disk.space) {
    w.gauge("rabbitmq_disk_space_available_bytes",
            "Free bytes on the data directory's file system (strata_node_disk_free_bytes)", {},
            double(disk.space->free_bytes));
  }
  w.gauge("rabbitmq_disk_space_available_limit_bytes",
          "The free space below which publishing is refused (disk.free_limit_bytes)", {},
          double(disk.free_limit_bytes));
}

}  // namespace

std::string server_metrics_text(const ServerMetricsInput& in) {
  const ServerCounters& c = in.counters;
  PromWriter w;
  w.gauge("strata_server_connections", "Open client connections", {},
          double(c.connections_open.load()));
  w.counter("strata_server_connections_accepted_total", "Client connections accepted", {},
            double(c.connections_accepted.load()));
  w.gauge("strata_server_publishers", "Declared publishers", {}, double(c.publishers.load()));
  w.gauge("strata_server_consumers", "Subscriptions", {}, double(c.consumers.load()));
  w.counter("strata_server_messages_in_total", "Messages received in Publish frames", {},
            double(c.messages_in.load()));
  w.counter("strata_server_messages_confirmed_total", "Publishing ids confirmed", {},
            double(c.messages_confirmed.load()));
  w.counter("strata_server_chunks_out_total", "Chunks delivered (Deliver frames)", {},
            double(c.chunks_out.load()));
  w.counter("strata_server_chunks_joined_total",
            "Stored chunks delivered inside another chunk's Deliver (server.coalesce_bytes)", {},
            double(c.chunks_joined.load()));
  w.counter("strata_server_bytes_out_total", "Bytes of Deliver frames", {},
            double(c.bytes_out.load()));
  w.counter("strata_server_replica_remote_chunks_total",
            "Chunks replica subscriptions read from the bucket", {},
            double(c.replica_remote_chunks.load()));
  w.counter("strata_server_replica_forwarded_chunks_total",
            "Chunks replica subscriptions forwarded from owners", {},
            double(c.replica_forwarded_chunks.load()));
  w.counter("strata_server_replica_links_total", "Subscriptions replicas made at owners", {},
            double(c.replica_links.load()));
  w.counter("strata_server_protocol_errors_total", "Frames refused (malformed, out of order)", {},
            double(c.protocol_errors.load()));
  w.counter("strata_server_auth_failures_total",
            "Logins refused (bad credentials, guest from a remote peer, throttled)", {},
            double(c.auth_failures.load()));
  w.counter("strata_server_handshake_timeouts_total",
            "Connections closed because a handshake step did not come in time", {},
            double(c.handshake_timeouts.load()));
  w.counter("strata_server_partial_frame_timeouts_total",
            "Open connections closed for a frame left incomplete past "
            "server.partial_frame_timeout_ms",
            {}, double(c.partial_frame_timeouts.load()));
  w.counter("strata_server_send_timeouts_total",
            "Open connections closed because a write to their client did not end within "
            "server.send_timeout_ms",
            {}, double(c.send_timeouts.load()));
  w.gauge("strata_server_buffered_bytes",
          "Bytes held for clients that have not read them (queued frames, deliveries read ahead)",
          {}, double(c.outbound.bytes.load()));
  w.gauge("strata_server_buffered_limit_bytes", "server.max_buffered_bytes", {},
          double(c.outbound.limit.load()));
  w.counter("strata_server_backlog_pauses_total",
            "Times a connection stopped being read because its client had not read its own "
            "queued frames",
            {}, double(c.outbound.backlog_pauses.load()));
  w.counter("strata_server_buffered_limit_pauses_total",
            "Times a connection stopped being read because the server held more than "
            "server.max_buffered_bytes for its clients",
            {}, double(c.outbound.limit_pauses.load()));
  w.counter("strata_server_frames_too_large_total",
            "Frames refused for their size (8192 bytes before Open, then frame_max)", {},
            double(c.frames_too_large.load()));
  w.counter("strata_server_tls_connections_total", "Connections accepted on the TLS listener", {},
            double(c.tls_connections.load()));
  w.counter("strata_server_tls_handshake_failures_total",
            "TLS handshakes that failed or did not finish in time", {},
            double(c.tls_handshake_failures.load()));
  w.counter("strata_server_tls_kernel_send_connections_total",
            "TLS connections whose records the kernel sent (kernel TLS; deliveries by "
            "SSL_sendfile)",
            {}, double(c.tls_kernel_send.load()));
  w.counter("strata_server_tls_sendfile_bytes_total",
            "Deliver bodies sent over kernel TLS by SSL_sendfile from the segment files, in bytes",
            {}, double(c.tls_sendfile_bytes.load()));
  w.counter("strata_server_tls_reloads_total", "TLS certificate reloads that took effect", {},
            double(in.tls_reloads));
  w.counter("strata_server_connections_refused_limit_total",
            "Connections refused for server.max_connections or a per-user or per-vhost limit", {},
            double(c.connections_refused_limit.load()));
  w.counter("strata_server_publish_refused_disk_alarm_total",
            "Messages refused (code 6, stream_not_available) while the disk alarm was raised", {},
            double(c.disk_alarm_refusals.load()));
  w.counter("strata_server_access_refused_total",
            "Commands refused for want of a configure, write or read permission", {},
            double(c.access_refused.load()));
  w.counter("strata_http_api_auth_failures_total",
            "Management API requests refused for wrong credentials", {},
            double(in.api_auth_failures));
  w.counter("strata_access_changes_total",
            "Live changes to users and permissions made through this node's management API", {},
            double(in.access_changes));
  w.counter("strata_server_messages_out_total",
            "Records in the chunks delivered (a first chunk's records before the "
            "subscription's offset included)",
            {}, double(c.records_out.load()));
  write_errors(w, c);
  for (const auto& [name, s] : in.clients) {
    const Labels l = stream_labels(name);
    w.gauge("strata_stream_publishers", "Publishers declared on the stream on this node", l,
            double(s.publishers));
    w.gauge("strata_stream_consumers", "Subscriptions to the stream on this node", l,
            double(s.consumers));
    w.gauge("strata_stream_consumer_max_offset_lag",
            "The largest offset_lag of the stream's consumers on this node: committed messages "
            "beyond the next offset each will be sent (RabbitMQ's "
            "rabbitmq_stream_consumer_max_offset_lag)",
            l, double(s.max_lag));
  }
  write_group_lags(w, in.clients, in.consumer_group_series);
  w.gauge("strata_build_info", "1, labelled with the build: version and compiler",
          {{"version", kStrataVersion}, {"compiler", kCompiler}}, 1);
  write_rabbitmq_names(w, c, in.clients, in.disk);
  return w.text();
}

}  // namespace strata::server
