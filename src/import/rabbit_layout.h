// Where a stopped RabbitMQ node keeps its streams, and which stream each
// directory is. RabbitMQ names a stream's osiris directory
//   to_base64uri(<vhost> "_" <queue name> "_" <creation time in ns>)
// under <node dir>/stream/, where to_base64uri replaces every byte outside
// [A-Za-z0-9_=-] with "_" — lossy, so the names come from the definitions
// export (`rabbitmqctl export_definitions`), each queue of type stream
// matched to the one directory its name maps to.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/fs.h"
#include "common/result.h"

namespace strata::import {

// One stream of the definitions, and where its data is.
struct RabbitStream {
  std::string vhost;
  std::string name;
  nlohmann::json arguments;           // the queue's "arguments" object
  std::string dir;                    // its osiris directory; empty when none was matched
  std::string problem;                // why none was matched (or why several were)
  std::vector<std::string> segments;  // <dir>/<offset>.segment, oldest first
};

// What the definitions and the stream directory hold.
struct RabbitLayout {
  std::string stream_root;             // <node dir>/stream
  std::vector<RabbitStream> streams;   // stream queues of the vhost asked for, in definitions order
  std::vector<std::string> unmatched;  // directories no stream of that vhost maps to
  std::vector<std::string> other_vhosts;  // "<vhost>/<name>" of stream queues left out
};

// The prefix of the directory names RabbitMQ gives a stream of `vhost` and
// `name` (the creation time follows it).
std::string osiris_dir_prefix(std::string_view vhost, std::string_view name);

// `rabbit_dir`: the node directory ($RABBITMQ_MNESIA_BASE/<node>) or its
// stream/ subdirectory. `definitions`: the parsed export. Streams of
// `vhost` only (strata serves one namespace). Errors: the directory or
// definitions are not what they should be (invalid_argument / not_found
// naming them).
Result<RabbitLayout> read_rabbit_layout(FileSystem& fs, const std::string& rabbit_dir,
                                        const nlohmann::json& definitions,
                                        const std::string& vhost);

}  // namespace strata::import
