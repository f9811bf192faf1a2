// What `strata perf` is asked to do (the flags of cli/cmd_perf.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"
#include "perf/connection.h"
#include "proto/commands.h"

namespace strata::perf {

struct PerfOptions {
  ConnectOptions connect;
  std::string stream = "strata-perf";
  bool delete_stream = false;
  // The Create's arguments (`--stream-arg KEY=VALUE`, e.g. max-length-bytes,
  // initial-cluster-size, x-strata-confirm), as RabbitMQ's PerfTest passes
  // its stream flags.
  proto::Properties stream_args;
  int producers = 1;
  int consumers = 1;
  uint32_t message_size = 100;      // bytes per message body
  uint32_t batch_size = 100;        // entries (publishing ids) per Publish frame
  uint32_t sub_entry_size = 0;      // >0: messages per uncompressed sub-batch entry
  uint32_t confirm_window = 10000;  // messages published but not confirmed, per producer
  uint64_t rate = 0;                // messages/s over all producers; 0 = unlimited
  double time_s = 10;               // run length when messages == 0
  uint64_t messages = 0;            // >0: publish this many in all, then stop
  proto::OffsetSpec offset{proto::OffsetType::next, 0};
  uint16_t initial_credit = 10;
  // Stream filtering (RabbitMQ 3.13): >0, producers publish with Publish v2
  // and give every message of a frame the filter value "v<k>", k the
  // frame's number modulo filter_values; non-empty, consumers subscribe
  // with filter.0 = `filter` (and get only the chunks that may hold it).
  uint32_t filter_values = 0;
  std::string filter;
  // After publishing stops: how long to wait for confirms and consumers.
  double drain_timeout_s = 30;
};

// "first", "last", "next", a number (offset) or "@<ms since epoch>".
Result<proto::OffsetSpec> parse_offset_spec(std::string_view s);
// "host:port", "rabbitmq-stream://user:pass@host:port/vhost".
Status apply_uri(std::string_view uri, ConnectOptions* o);

}  // namespace strata::perf
