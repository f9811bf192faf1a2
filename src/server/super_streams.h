// SuperStreams: the super streams of a node (RabbitMQ's partitioned
// streams): a name, its partition streams in order, and one binding key per
// partition. Route answers the streams whose binding key equals a routing
// key exactly (as RabbitMQ's Route command does with its direct exchange);
// Partitions answers the partition streams in order.
//
// Persistence: a SuperStreamStore (super_stream_store.h) — one file per
// super stream under <data_dir>/super_streams on a single node, one etcd
// key per super stream in a cluster. Answers come from memory: what was
// loaded at open, created or removed here, and — in a cluster — what the
// node learned from the watch of the keys other nodes write (learned,
// learned_all).
//
// Create order: the partition streams first (through the caller's
// callback), then the store. A failure before the store holds it deletes
// the partitions this call created. A crash in between leaves ordinary
// streams without a super stream; creating the super stream again then
// fails naming the partition that exists (delete it, or the streams, first).
// Delete order: the store first (the super stream is gone once that is
// durable), then the partitions; a partition already gone is not an error.
//
// Thread safety: every method may be called from any thread. create and
// remove block on the callbacks and on the store: not on an event loop.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/fs.h"
#include "common/result.h"
#include "server/super_stream_store.h"

namespace strata::server {

struct SuperStream {
  std::string name;
  std::vector<std::string> partitions;    // stream names, in partition order
  std::vector<std::string> binding_keys;  // one per partition, same order
  bool operator==(const SuperStream&) const = default;
};

// Binding keys: 1..255 bytes, unique within a super stream.
constexpr size_t kMaxBindingKeyBytes = 255;

class SuperStreams {
 public:
  // Creates or deletes one partition stream (already_exists / not_found as
  // the node answers them).
  using StreamFn = std::function<Status(const std::string& stream)>;

  // Loads every super stream under `dir` (created if missing); leftover
  // temporary files are removed. Errors: a damaged file (corrupt, naming
  // it), I/O.
  static Result<std::unique_ptr<SuperStreams>> open(std::string dir, FileSystem* fs = nullptr);
  // Loads every super stream `store` holds, and keeps them there.
  static Result<std::unique_ptr<SuperStreams>> open(std::unique_ptr<SuperStreamStore> store);

  // What another node stored (a cluster's watch): `s` set, the super
  // stream `name` as stored now; unset, removed.
  void learned(std::string_view name, std::optional<SuperStream> s);
  // The whole stored set, as read at once (a watch starting over).
  void learned_all(std::vector<SuperStream> all);

  // Errors: invalid_argument (bad super stream or partition name, no
  // partitions, a binding key count that differs from the partitions', an
  // empty, oversized or repeated binding key or partition), already_exists
  // (the super stream, or — from create_partition — a partition), or the
  // callback's or the file's error.
  Status create(const SuperStream& s, const StreamFn& create_partition,
                const StreamFn& delete_partition);
  // not_found if absent. The super stream is gone once this returns, even
  // if deleting a partition then fails (that error is returned).
  Status remove(std::string_view name, const StreamFn& delete_partition);

  // Streams whose binding key equals `routing_key` (not_found: no such
  // super stream; an empty list: no binding matches).
  Result<std::vector<std::string>> route(std::string_view super_stream,
                                         std::string_view routing_key) const;
  // The partition streams in order (not_found: no such super stream).
  Result<std::vector<std::string>> partitions(std::string_view super_stream) const;
  // The super stream a stream is a partition of, if any.
  std::optional<std::string> super_stream_of(std::string_view stream) const;
  std::vector<std::string> names() const;
  // Every super stream, by name.
  std::vector<SuperStream> all() const;

 private:
  explicit SuperStreams(std::unique_ptr<SuperStreamStore> store) : store_(std::move(store)) {}

  std::unique_ptr<SuperStreamStore> store_;
  mutable std::mutex mu_;
  std::map<std::string, SuperStream, std::less<>> supers_;
  std::set<std::string, std::less<>> busy_;  // names being created or deleted
};

// Validation and the file (docs/formats/server-state.md, "Super stream file"); exposed
// for tests.
Status validate_super_stream(const SuperStream& s);
Bytes encode_super_stream_file(const SuperStream& s);
// `version`, if given, receives the file's version.
Result<SuperStream> decode_super_stream_file(BytesView in, const std::string& where,
                                             uint8_t* version = nullptr);
// The value of a cluster's key for super stream `name` (super_stream_store.h):
// corrupt, naming `where`, unless it decodes to a super stream of that name.
Result<SuperStream> decode_super_stream_key(std::string_view name, BytesView value,
                                            const std::string& where);

}  // namespace strata::server
