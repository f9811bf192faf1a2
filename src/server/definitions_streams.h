// Streams in RabbitMQ's definitions JSON: a queue of type "stream" and its
// "arguments" object, mapped to and from strata's stream settings, so a
// definitions file exported from RabbitMQ creates the same streams here
// and strata's export reads back into RabbitMQ.
//   x-max-length-bytes                number, max-length-bytes
//   x-max-age                         "7D", "12h", ... , max-age
//   x-stream-max-segment-size-bytes   number, stream-max-segment-size-bytes
//   x-stream-filter-size-bytes        number, stream-filter-size-bytes
//   x-initial-cluster-size            number, initial-cluster-size
//   x-strata-*                        as strata's own Create arguments
// x-queue-type and x-queue-leader-locator are RabbitMQ's placement and
// carry no setting here; other arguments are
// ignored as a Create ignores them, and named in `ignored`.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.h"
#include "node/stream_settings.h"

namespace strata::server {

// invalid_argument naming the argument for a value of the wrong type or
// out of range (parse_stream_args's checks).
Result<node::StreamSettings> settings_from_queue_arguments(const nlohmann::json& arguments,
                                                           std::vector<std::string>* ignored);

// `cur` with the retention `arguments` give — x-max-age, x-max-length-bytes,
// x-strata-local-max-bytes (or without "x-"), null removing a limit so the
// node's configuration applies again — for an alteration of a running
// stream (node/node.h, alter_stream). invalid_argument naming any other
// argument, a value parse_stream_args refuses, or no argument at all.
Result<node::StreamSettings> alter_retention(node::StreamSettings cur,
                                             const nlohmann::json& arguments);

// The arguments object of a stream created with `s` (what was given, not
// defaults), x-queue-type included.
nlohmann::json queue_arguments_from_settings(const node::StreamSettings& s);

}  // namespace strata::server
