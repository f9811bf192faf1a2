// What the command rooms of a connection (connection.h) reach of the
// server: one narrow interface per concern, each implemented by one piece of
// the server (served_streams.h, stream_ops.h, tracked_offsets.h). A room is
// given only the interfaces its commands need — never the server itself —
// so that each can be read, changed and tested on its own.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "node/stream_settings.h"
#include "proto/commands.h"
#include "server/replica_feed.h"
#include "server/served_stream.h"
#include "server/super_streams.h"

namespace strata::server {

// Where clients are told to connect (Open's properties, Metadata).
struct Advertised {
  std::string host;
  uint32_t port = 0;
  // The TLS listener's: a cluster's Metadata names the other nodes' TLS
  // listeners too.
  bool tls = false;
};

// The streams served here, for publishers, subscriptions and StreamStats.
class StreamDirectory {
 public:
  virtual ~StreamDirectory() = default;
  // The stream's shared state, opened for serving on first use; not_found
  // when this node does not serve it, unavailable while it is being opened.
  virtual Result<std::shared_ptr<ServedStream>> served(const std::string& name) = 0;
  // The answer for a stream this node does not serve: stream_not_available
  // while it is being opened here, or when another node of the cluster
  // does (or will, after a takeover), as RabbitMQ answers on a non-leader,
  // so the client asks Metadata for the leader; else stream_does_not_exist.
  virtual proto::ResponseCode missing_code(const std::string& name) = 0;
  // `stream`'s place among the partitions of super stream `super`
  // (single active consumers spread over them); nullopt if it is none.
  virtual std::optional<uint32_t> partition_index(const std::string& super,
                                                  const std::string& stream) = 0;
};

// Consumers of a stream another node of the cluster owns.
class ReplicaSource {
 public:
  virtual ~ReplicaSource() = default;
  // What a replica subscription of `name` reads through (replica_feed.h);
  // not_found unless another node serves `name` (or will).
  virtual Result<ReplicaEnv> replica_env(const std::string& name) = 0;
};

// Creating, deleting and describing streams and super streams. The
// mutations block (a node's open, a deletion of every object): a room runs
// them as tasks.
class StreamAdmin {
 public:
  virtual ~StreamAdmin() = default;
  virtual Status create_stream(const std::string& name, const node::StreamSettings& settings) = 0;
  virtual Status delete_stream(const std::string& name) = 0;
  // Every partition is created with the super stream's settings.
  virtual Status create_super_stream(const SuperStream& s,
                                     const node::StreamSettings& settings) = 0;
  virtual Status delete_super_stream(const std::string& name) = 0;
  // Metadata's brokers and streams (its correlation id is the room's).
  // `self`: this node as the asking client reaches it (the listener it
  // came through).
  virtual proto::MetadataResponse metadata(const std::vector<std::string>& streams,
                                           const Advertised& self) = 0;
  virtual Result<std::vector<std::string>> route(const std::string& super,
                                                 const std::string& routing_key) = 0;
  virtual Result<std::vector<std::string>> partitions(const std::string& super) = 0;
};

// Consumer offsets (StoreOffset / QueryOffset): a file per stream on a
// single node, etcd in a cluster (where they follow the stream).
class ConsumerOffsets {
 public:
  virtual ~ConsumerOffsets() = default;
  // Whether query() waits on the network (a room then runs it as a task).
  virtual bool query_blocks() const = 0;
  // Records `offset`; not_found for a stream unknown here (the protocol
  // has no answer to a store: the room only logs the error).
  virtual Status store(const std::string& stream, const std::string& reference,
                       uint64_t offset) = 0;
  // The stored offset, nullopt when none; not_found for a stream unknown
  // here.
  virtual Result<std::optional<uint64_t>> query(const std::string& stream,
                                                const std::string& reference) = 0;
};

}  // namespace strata::server
