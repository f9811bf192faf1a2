// What `strata serve` adds to the node's /metrics (docs/METRICS.md, "strata
// serve"): its counters, its clients per stream, errors by protocol code,
// the build, and the names RabbitMQ's rabbitmq_prometheus gives the same
// quantities so a dashboard made for RabbitMQ streams shows something.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "node/disk_guard.h"
#include "server/management_streams.h"
#include "server/server_counters.h"

namespace strata::server {

struct ServerMetricsInput {
  const ServerCounters& counters;
  // By stream: every stream served here, and those served elsewhere that
  // have clients here.
  const std::map<std::string, StreamClients>& clients;
  uint64_t tls_reloads = 0;
  uint64_t api_auth_failures = 0;
  uint64_t access_changes = 0;
  // server.consumer_group_metrics: the most consumer group series written.
  uint32_t consumer_group_series = 100;
  // The node's disk alarm (node/disk_guard.h), for RabbitMQ's names.
  node::DiskWatchSnapshot disk{};
};

// The Prometheus text of those metrics.
std::string server_metrics_text(const ServerMetricsInput& in);

}  // namespace strata::server
