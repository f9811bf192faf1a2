// SubscriptionRoom: the commands of consumers — Subscribe, Credit,
// Unsubscribe, and ConsumerUpdate's answer — with single active consumers
// (sac_coordinator.h) and consumers of streams another node owns (replica
// subscriptions, replica_feed.h). A subscription's chunks are read and sent
// by its Delivery (delivery.h) or ReplicaFeed, within the credit the client
// gives.
//
// Thread safety: the connection's strand (sac_effect: any thread; it posts).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/task.h"
#include "server/client_tally.h"
#include "server/handshake_room.h"
#include "server/room_services.h"
#include "server/sac_coordinator.h"
#include "server/server_counters.h"
#include "server/session.h"

namespace strata::server {

class SubscriptionRoom {
 public:
  // `handshake`: what the connection negotiated (Deliver's version, the
  // frame size a joined chunk must fit in).
  SubscriptionRoom(Session& session, const HandshakeRoom& handshake, StreamDirectory& streams,
                   ReplicaSource& replicas, SacCoordinator& sac, const ServerSettings& settings,
                   ServerCounters& counters, TaskContext tasks);

  void on(const proto::SubscribeRequest& r);
  void on(const proto::CreditRequest& r);
  void on(const proto::UnsubscribeRequest& r);
  void on(const proto::ConsumerUpdateResponse& r);
  void on(const proto::ResolveOffsetSpecRequest& r);
  // A single-active-consumer effect for one of this connection's
  // subscriptions. Any thread.
  void sac_effect(const SacEffect& e);

  // The stream is no longer served here: its subscriptions go. Whether
  // there were any.
  bool drop_stream(const std::string& stream);
  // The connection closed: every subscription stops, and its groups learn
  // it.
  void close();
  // Each subscription: id, stream, where it started, its credit, and for a
  // single active consumer its group and whether it is the active one.
  nlohmann::json describe() const;
  void tally(ClientTally* t) const;

 private:
  struct Subscription {
    uint8_t id = 0;
    std::string stream;
    std::shared_ptr<ServedStream> served;
    std::shared_ptr<Delivery> delivery;  // null until its reader is open
    // A stream another node owns: served as a replica (served is null).
    std::shared_ptr<ReplicaFeed> replica;
    uint32_t credit = 0;  // given before the delivery started
    bool closed = false;
    // Where the subscription said to start.
    proto::OffsetSpec spec;
    // Its filter.N values and match-unfiltered (null: none).
    std::shared_ptr<const log::FilterMatcher> filter;
    // Single active consumer: the group's name ("" when not one), whether
    // the group made it the active one, and the offset spec the client
    // answered its coming activation with (none: `spec`).
    std::string sac_name;
    // The consumer's group: its "name" property, the reference its offsets
    // are tracked under ("" when unnamed).
    std::string group;
    bool active = true;
    std::optional<proto::OffsetSpec> answered;
    uint64_t generation = 0;  // bumped by every (de)activation
    // A replica's copy subscription (DeliveryOptions::copy).
    bool copy = false;
    std::string copy_node;  // the copier's node (kCopyNodeProperty)
  };
  using SubPtr = std::shared_ptr<Subscription>;

  void run_sac_effect(const SacEffect& e);
  // The data bytes a joined wire chunk may hold (server.coalesce_bytes within
  // the agreed frame size).
  uint64_t coalesce_limit() const;
  // Whether the client is another strata node (server_limits.h, kPeerProduct).
  bool from_peer() const;
  // `last_below`: for a `last` spec, the log's end when the subscription
  // was answered (its last chunk then is the one delivered).
  void start_delivery(const SubPtr& s, const log::OffsetSpec& spec,
                      std::optional<uint64_t> last_below = std::nullopt);
  void on_reader(const SubPtr& s, uint64_t generation,
                 TaskOutcome<Result<std::unique_ptr<tier::StreamReader>>> out);
  // Subscribe on a stream another node owns; false when this node cannot
  // serve it as a replica.
  bool subscribe_replica(const proto::SubscribeRequest& r);
  // Tells the client the stream is unavailable to this subscription: it
  // asks Metadata again and subscribes anew.
  void unavailable(const std::string& stream);
  void stop_subscription(const SubPtr& s);

  Session& session_;
  const HandshakeRoom& handshake_;
  StreamDirectory& streams_;
  ReplicaSource& replicas_;
  SacCoordinator& sac_;
  const ServerSettings& settings_;
  ServerCounters& counters_;
  TaskContext tasks_;
  std::map<uint8_t, SubPtr> subscriptions_;
  // ConsumerUpdate requests awaiting their answer: correlation id ->
  // subscription.
  std::map<uint32_t, uint8_t> pending_updates_;
};

}  // namespace strata::server
