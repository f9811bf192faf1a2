// Connection: one client of `strata serve`, on its own strand of the
// server's event loop. It reads frames (proto/frame.h splits them; frames
// above the limit — a fixed one before Tune, the negotiated one after — are
// answered with "frame too large" and a close), keeps the handshake state
// (handshake.h), runs each command, and writes through a queue.
//
// Flow control both ways, never unbounded buffering:
//  - a publisher that sends faster than the log confirms is held back by
//    not reading its socket while its unconfirmed bytes exceed a budget;
//  - a consumer gets chunks only while it has credit, and none is read
//    for it while the connection's unsent bytes exceed a budget (a slow
//    reader of its socket stalls only itself).
//
// Thread safety: public methods may be called from any thread; they post
// to the strand.
#pragma once

#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <string>

#include "common/task.h"
#include "proto/dispatch.h"
#include "server/delivery.h"
#include "server/handshake.h"
#include "server/replica_feed.h"
#include "server/sac_group.h"
#include "server/served_stream.h"
#include "server/stream_appender.h"

namespace strata::tier {
class StreamReader;
}

namespace strata::server {

class Server;
class ServedStream;

class Connection : public PublishSink,
                   public FrameSink,
                   public StreamWatcher,
                   public std::enable_shared_from_this<Connection> {
 public:
  Connection(Server& server, Strand strand, asio::ip::tcp::socket socket, uint64_t id);
  ~Connection() override;

  void start();
  // Closes the connection (server stopping). Any thread.
  void shutdown();
  void on_appended(uint8_t publisher_id, std::vector<uint64_t> ids, proto::ResponseCode code,
                   uint64_t bytes) override;
  // The stream was deleted: MetadataUpdate, and its publishers and
  // subscriptions dropped. Any thread.
  void stream_gone(const std::string& stream) override;
  uint64_t id() const { return id_; }
  // FrameSink: a Deliver frame, written in order with the other frames.
  void send(std::shared_ptr<const ChunkFrame> frame,
            std::function<void(std::error_code)> done) override;
  // Single active consumer effects for one of this connection's
  // subscriptions. Any thread.
  void sac_effect(const SacEffect& e);

 private:
  struct Publisher {
    std::string stream;
    std::string ref;
    std::shared_ptr<ServedStream> served;
  };
  struct Subscription {
    uint8_t id = 0;
    std::string stream;
    std::shared_ptr<ServedStream> served;
    std::shared_ptr<Delivery> delivery;  // null until its reader is open
    // A stream another node owns: served as a replica (served is null).
    std::shared_ptr<ReplicaFeed> replica;
    uint32_t credit = 0;  // given before the delivery started
    bool closed = false;
    // Single active consumer: the group's name ("" when not one) and the
    // offset spec the client answered its activation with.
    std::string sac_name;
    proto::OffsetSpec spec;
    uint64_t generation = 0;  // bumped by every (de)activation
  };
  using SubPtr = std::shared_ptr<Subscription>;
  // One entry of the write queue: frame bytes, or a Deliver frame that may
  // carry file bytes for sendfile.
  struct OutItem {
    Bytes bytes;
    std::shared_ptr<const ChunkFrame> chunk;
    std::function<void(std::error_code)> done;
  };

  void read_more();
  void on_read(const std::error_code& ec, size_t n);
  void process_frames();
  void handle(BytesView body);
  void send(Bytes frame);
  // Encodes one protocol message (proto/commands.h) and queues it.
  template <class Message>
  void send_message(const Message& m) {
    Bytes f;
    encode(m, &f);
    send(std::move(f));
  }
  void write_more();
  void close_now(const std::string& why);
  // Sends Close (code, reason), then closes once it is written.
  void close_with(proto::ResponseCode code, const std::string& reason);
  void close_after_flush();
  void arm_heartbeat();
  void respond_code(uint16_t key, uint32_t correlation_id, proto::ResponseCode code);

  void on(const proto::PeerPropertiesRequest& r);
  void on(const proto::SaslHandshakeRequest& r);
  void on(const proto::SaslAuthenticateRequest& r);
  void on(const proto::TuneFrame& r);
  void on(const proto::OpenRequest& r);
  void on(const proto::CloseRequest& r);
  void on(const proto::CloseResponse& r);
  void on(const proto::HeartbeatFrame& r);
  void on(const proto::ExchangeCommandVersionsRequest& r);
  void on(const proto::CreateStreamRequest& r);
  void on(const proto::DeleteStreamRequest& r);
  void on(const proto::MetadataRequest& r);
  void on(const proto::StreamStatsRequest& r);
  void on(const proto::DeclarePublisherRequest& r);
  void on(const proto::PublishRequest& r);
  void on(const proto::QueryPublisherSequenceRequest& r);
  void on(const proto::DeletePublisherRequest& r);
  void on(const proto::SubscribeRequest& r);
  void on(const proto::CreditRequest& r);
  void on(const proto::UnsubscribeRequest& r);
  void on(const proto::StoreOffsetRequest& r);
  void on(const proto::QueryOffsetRequest& r);
  // Cluster mode: the offsets in etcd (connection_offsets.cpp).
  void store_cluster_offset(const proto::StoreOffsetRequest& r);
  void query_cluster_offset(const proto::QueryOffsetRequest& r);
  void on(const proto::RouteRequest& r);
  void on(const proto::PartitionsRequest& r);
  void on(const proto::ConsumerUpdateResponse& r);
  void on(const proto::CreateSuperStreamRequest& r);
  void on(const proto::DeleteSuperStreamRequest& r);

  // The data bytes a joined wire chunk may hold (server.coalesce_bytes within
  // the agreed frame size).
  uint64_t coalesce_limit() const;
  void start_delivery(const SubPtr& s, const log::OffsetSpec& spec);
  // Subscribe on a stream another node owns (replica_feed.h); false when
  // this node cannot serve it as a replica.
  bool subscribe_replica(const proto::SubscribeRequest& r);
  void stop_subscription(const SubPtr& s);
  void drop_stream(const std::string& stream);
  void cluster_metadata(const proto::MetadataRequest& r, proto::MetadataResponse* resp);
  proto::ResponseCode missing_stream_code(const std::string& stream);
  void run_sac(const std::vector<SacEffect>& effects);

  Server& server_;
  Strand strand_;
  asio::ip::tcp::socket socket_;
  const uint64_t id_;
  bool loopback_ = false;
  std::string peer_;
  std::string user_;

  HandshakeState state_ = HandshakeState::peer_properties;
  uint32_t frame_max_;  // what this side accepts now
  uint32_t heartbeat_s_ = 0;
  uint16_t deliver_version_ = 1;
  asio::steady_timer heartbeat_timer_;
  // The client's Close was answered: until it closes its side (or
  // server.close_linger_ms passes) further Close requests are answered too, and
  // every other frame is ignored.
  bool close_answered_ = false;
  asio::steady_timer linger_timer_;
  std::chrono::steady_clock::time_point last_read_;
  std::chrono::steady_clock::time_point last_write_;

  Bytes in_;
  size_t in_begin_ = 0;
  size_t in_end_ = 0;
  bool reading_ = false;

  std::deque<OutItem> out_q_;
  std::vector<Bytes> writing_;
  uint64_t out_bytes_ = 0;  // queued and being written
  bool write_active_ = false;
  bool close_after_write_ = false;
  bool closed_ = false;

  uint64_t unconfirmed_bytes_ = 0;
  std::map<uint8_t, Publisher> publishers_;
  std::map<uint8_t, SubPtr> subscriptions_;
  uint32_t next_server_correlation_ = 1;
  // ConsumerUpdate requests awaiting their answer: correlation id -> subscription.
  std::map<uint32_t, uint8_t> pending_updates_;
};

}  // namespace strata::server
