// ReplicaFeed: the shell of one replica subscription (replica_core.h holds
// its decisions): a consumer of a stream this node does not own. Offsets
// in the persisted manifest are read from the bucket here (the manifest
// read from the catalog and the bucket, fragments by ranged GETs through
// a tier::RemoteReader and the node's group cache: the owner does no work
// for them); the tail above it is forwarded from the owner through an
// OwnerLink (owner_link.h), chunk bytes relayed unchanged behind a Deliver
// head for this consumer. When the owner changes (its MetadataUpdate, the
// connection's end, or the cluster's view naming another owner) the feed
// subscribes again at the new owner from the next offset it has not
// delivered; if it cannot within `reconnect_limit`, on_end runs and the
// consumer gets a MetadataUpdate.
//
// Memory: remote reads prepare at most `batch_chunks` chunks and
// `batch_bytes` of bodies (plus one chunk) per read job, and one job runs
// at a time, only while fewer than a batch of frames is unsent; forwarded
// chunks arrive only within the credit the link holds: the consumer's, but
// at most kReplicaLinkWindow chunks given to the owner and not yet written
// to the consumer, so a consumer that grants a large credit and reads
// slowly does not make this node queue its stream.
//
// Threads: every method runs on the consumer connection's strand; reads
// and the manifest load are pool tasks (common/task.h): each ends in one
// event, its result or its deadline.
#pragma once

#include <asio/steady_timer.hpp>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/task.h"
#include "node/remote_stream.h"
#include "server/delivery.h"
#include "server/owner_link.h"
#include "server/replica_core.h"

namespace strata::server {

// Where the stream's owner is now.
struct OwnerLookup {
  enum class Kind : uint8_t { owned, ownerless, gone };
  Kind kind = Kind::ownerless;
  std::string node_id;
  std::string host;
  uint16_t port = 0;
};

struct ReplicaEnv {
  std::string stream;
  // The stream's remote tier, read without owning the stream: its
  // persisted manifest (not_found when it has none yet) and readers of it.
  // Null when tiering is disabled on this node (the feed only forwards).
  std::shared_ptr<node::RemoteStream> remote;
  tier::StreamReaderOptions reader;
  std::function<OwnerLookup()> owner;
  std::string user, password;       // what this node logs in to the owner as
  std::string mechanism = "PLAIN";  // ... and how (PeerLogin::mechanism)
  // Set (cluster.peer_tls): owners are dialled over TLS with this client
  // context, at the TLS address owner() gives, their certificate naming
  // that host when peer_tls_verify_host.
  std::shared_ptr<asio::ssl::context> peer_tls;
  bool peer_tls_verify_host = true;
  std::chrono::milliseconds reconnect_limit{15'000};
  std::chrono::milliseconds owner_check{250};  // how often the view is compared
  std::chrono::milliseconds read_deadline{std::chrono::minutes(15)};
  // Consecutive small remote chunks go out as one of up to this many data
  // bytes (delivery.h joinable; 0: as stored).
  uint64_t coalesce_bytes = 0;
  // Counted as they happen (the server's metrics); may be null.
  std::atomic<uint64_t>* remote_chunks = nullptr;
  std::atomic<uint64_t>* forwarded_chunks = nullptr;
  std::atomic<uint64_t>* links = nullptr;

  // A link to `o` (owned) as this node: its address, the login, TLS.
  OwnerLinkOptions link_to(const OwnerLookup& o) const {
    OwnerLinkOptions lo;
    lo.host = o.host;
    lo.port = o.port;
    lo.user = user;
    lo.password = password;
    lo.mechanism = mechanism;
    lo.tls = peer_tls;
    lo.tls_verify_host = peer_tls_verify_host;
    return lo;
  }
};

struct ReplicaStats {
  uint64_t remote_chunks = 0;
  uint64_t forwarded_chunks = 0;
  uint64_t links = 0;  // subscriptions made at an owner
  uint64_t repeats_dropped = 0;
};

class ReplicaFeed : public std::enable_shared_from_this<ReplicaFeed> {
 public:
  // Starts serving `spec` to `sink`. on_end runs once on the strand when
  // the feed gives up (not after stop()); on_chunks counts delivered
  // chunks (remote, forwarded) for the server's counters.
  static std::shared_ptr<ReplicaFeed> start(ReplicaEnv env, proto::OffsetSpec spec,
                                            std::shared_ptr<FrameSink> sink, Strand strand,
                                            TaskContext tasks, uint8_t subscription_id,
                                            uint16_t deliver_version, uint32_t initial_credit,
                                            std::function<void(const Error&)> on_end);
  ~ReplicaFeed();

  void add_credit(uint16_t n);
  void stop();
  ReplicaStats stats() const { return st_; }
  // The next offset to deliver and the messages after it known committed
  // (ReplicaCore::lag: a lower bound); nullopt before the first chunk.
  std::optional<uint64_t> next_offset() const { return core_.delivered_next(); }
  std::optional<uint64_t> lag() const { return core_.lag(); }

  struct Source;

 private:
  ReplicaFeed(ReplicaEnv env, proto::OffsetSpec spec, Strand strand, TaskContext tasks);
  void open();
  void run(const ReplicaStep& step);
  void pump();
  // Gives the owner more of the consumer's credit, within kReplicaLinkWindow.
  void top_up_owner();
  // How much more of the consumer's credit the owner may be given now.
  uint32_t owner_credit_room() const;
  void read_remote();
  void connect();
  void link_down(const Error& e);
  void retry_later();
  void check_owner();
  void deliver_forwarded(const proto::DeliverFrame& m);
  void send(std::shared_ptr<ChunkFrame> f);
  Error diverged(const ChunkFrame& f) const;
  void end(const Error& e);

  ReplicaEnv env_;
  ReplicaCore core_;
  Strand strand_;
  TaskContext tasks_;
  std::shared_ptr<FrameSink> sink_;
  uint8_t sub_id_ = 0;
  uint16_t version_ = 1;
  std::function<void(const Error&)> on_end_;
  std::shared_ptr<Source> src_;
  std::shared_ptr<OwnerLink> link_;
  std::string linked_node_;
  ReplicaStep pending_;  // the forward step a reconnect runs
  asio::steady_timer timer_;
  std::chrono::milliseconds backoff_{100};
  uint32_t credit_ = 0;        // the consumer's, not used yet
  uint32_t unsent_ = 0;        // frames handed to the sink, not written yet
  uint32_t owner_credit_ = 0;  // credit the link to the owner holds, not used yet
  bool reading_ = false;
  bool remote_ = false;  // reading the remote tier
  bool stopped_ = false;
  ReplicaStats st_;
};

}  // namespace strata::server
