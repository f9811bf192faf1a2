#include "server/subscription_room.h"

#include <spdlog/spdlog.h>

#include <asio/post.hpp>

#include "server/server_limits.h"

namespace strata::server {

using namespace proto;

namespace {

log::OffsetSpec to_log_spec(const proto::OffsetSpec& s) {
  switch (s.type) {
    case OffsetType::first:
      return log::OffsetSpec::first();
    case OffsetType::last:
      return log::OffsetSpec::last();
    case OffsetType::next:
      return log::OffsetSpec::next();
    case OffsetType::offset:
      return log::OffsetSpec::at_offset(uint64_t(s.value));
    case OffsetType::timestamp:
      return log::OffsetSpec::at_timestamp(s.value);
  }
  return log::OffsetSpec::next();
}

// Subscribe's filter (RabbitMQ 3.13): the values of every property named
// filter.<anything>, and match-unfiltered = true; none without a filter.
std::shared_ptr<const log::FilterMatcher> filter_of(const Properties& props) {
  std::vector<std::string> values;
  bool match_unfiltered = false;
  for (const auto& [k, v] : props) {
    if (k.starts_with("filter.")) values.push_back(v);
    if (k == "match-unfiltered") match_unfiltered = v == "true";
  }
  if (values.empty()) return nullptr;
  return std::make_shared<const log::FilterMatcher>(std::move(values), match_unfiltered);
}

}  // namespace

SubscriptionRoom::SubscriptionRoom(Session& session, const HandshakeRoom& handshake,
                                   StreamDirectory& streams, ReplicaSource& replicas,
                                   SacCoordinator& sac, const ServerSettings& settings,
                                   ServerCounters& counters, TaskContext tasks)
    : session_(session),
      handshake_(handshake),
      streams_(streams),
      replicas_(replicas),
      sac_(sac),
      settings_(settings),
      counters_(counters),
      tasks_(std::move(tasks)) {}

void SubscriptionRoom::on(const SubscribeRequest& r) {
  if (subscriptions_.count(r.subscription_id)) {
    respond_code(session_, kSubscribe, r.correlation_id,
                 ResponseCode::subscription_id_already_exists);
    return;
  }
  if (!session_.allowed(Permission::read, r.stream, "subscribe")) {
    respond_code(session_, kSubscribe, r.correlation_id, ResponseCode::access_refused);
    return;
  }
  auto s = streams_.served(r.stream);
  if (!s.ok()) {
    if (subscribe_replica(r)) return;
    respond_code(session_, kSubscribe, r.correlation_id, streams_.missing_code(r.stream));
    return;
  }
  std::map<std::string, std::string> props(r.properties.begin(), r.properties.end());
  bool sac = props["single-active-consumer"] == "true";
  if (sac && props["name"].empty()) {
    // A group needs a name: RabbitMQ refuses this too.
    respond_code(session_, kSubscribe, r.correlation_id, ResponseCode::precondition_failed);
    return;
  }
  const bool copy = props[std::string(kCopyProperty)] == "1" && from_peer();
  if (copy && props[std::string(kCopyHoldsProperty)] == "1" &&
      r.offset.type == proto::OffsetType::offset &&
      uint64_t(std::max<int64_t>(r.offset.value, 0)) >= (*s)->stream()->committed_next()) {
    // The copy holds a chunk at or past this log's end: it is another
    // tenure's tail, which the copy must drop (server_limits.h).
    spdlog::info(
        "copy subscription of {} on {} from offset {}: this log ends at {}; the copy "
        "holds another tenure's tail and starts afresh",
        props[std::string(kCopyNodeProperty)], r.stream, r.offset.value,
        (*s)->stream()->committed_next());
    respond_code(session_, kSubscribe, r.correlation_id, ResponseCode::precondition_failed);
    return;
  }
  auto sub = std::make_shared<Subscription>();
  sub->id = r.subscription_id;
  sub->stream = r.stream;
  sub->served = *s;
  sub->credit = r.credit;
  sub->spec = r.offset;
  sub->group = props["name"];
  sub->filter = filter_of(r.properties);
  // Asked for by a node only (a client asking gets an ordinary delivery).
  sub->copy = copy;
  if (sub->copy) sub->copy_node = props[std::string(kCopyNodeProperty)];
  if (sac) {
    sub->sac_name = props["name"];
    sub->active = false;
  }
  subscriptions_[r.subscription_id] = sub;
  counters_.consumers += 1;
  (*s)->watch(session_.watcher());
  // `next` is where the stream ends when the subscription is answered, as
  // RabbitMQ resolves it: a message the client publishes once it has the
  // answer is delivered, however late the reader opens.
  // So is `last`: the last chunk committed when the subscription is
  // answered, not one the client publishes after (start_delivery finds it
  // below this bound, off the event loop: it may read an index file).
  log::OffsetSpec spec = to_log_spec(r.offset);
  const uint64_t answered_next = sub->served->stream()->committed_next();
  if (!sac && spec.kind == log::OffsetSpec::Kind::next) {
    spec = log::OffsetSpec::at_offset(answered_next);
  }
  respond_code(session_, kSubscribe, r.correlation_id, ResponseCode::ok);
  if (!sac) {
    start_delivery(sub, spec, answered_next);
    return;
  }
  // A partition of a super stream: consumers spread over the partitions.
  std::optional<uint32_t> index;
  if (!props["super-stream"].empty())
    index = streams_.partition_index(props["super-stream"], r.stream);
  ConsumerRef ref{session_.id(), r.subscription_id};
  std::string stream = r.stream, name = sub->sac_name;
  sac_.step([&](SacGroups& g, SacTime now) { return g.subscribe(stream, name, ref, index, now); });
}

// A consumer of a stream another node owns: remote offsets read from the
// bucket here, the tail forwarded from the owner (replica_feed.h). Single
// active consumer groups live on the owner: such a subscription keeps the
// owner-only answer. So does a filtered one: the feed does not read chunk
// filters, and a filtered consumer must never be sent a chunk its filter
// rules out.
bool SubscriptionRoom::subscribe_replica(const SubscribeRequest& r) {
  for (const auto& [k, v] : r.properties) {
    if (k == "single-active-consumer" && v == "true") return false;
  }
  if (filter_of(r.properties)) return false;
  auto env = replicas_.replica_env(r.stream);
  if (!env.ok()) return false;
  env->coalesce_bytes = coalesce_limit();
  auto sub = std::make_shared<Subscription>();
  sub->id = r.subscription_id;
  sub->stream = r.stream;
  sub->spec = r.offset;
  subscriptions_[r.subscription_id] = sub;
  counters_.consumers += 1;
  respond_code(session_, kSubscribe, r.correlation_id, ResponseCode::ok);
  std::weak_ptr<void> weak = session_.hold();
  std::weak_ptr<Subscription> wsub = sub;
  sub->replica = ReplicaFeed::start(
      std::move(env).value(), r.offset, session_.frames(), session_.strand(), tasks_, sub->id,
      handshake_.deliver_version(), r.credit,
      [this, weak, wsub, id = sub->id, stream = sub->stream](const Error& e) {
        spdlog::warn("subscription {} on {} (replica): {}", id, stream, e.to_string());
        auto hold = weak.lock();
        auto sub = wsub.lock();
        if (!hold || !sub || sub->closed) return;
        // Told like a consumer of a stream this node stopped serving.
        subscriptions_.erase(sub->id);
        stop_subscription(sub);
        unavailable(sub->stream);
      });
  return true;
}

bool SubscriptionRoom::from_peer() const {
  for (const auto& [k, v] : handshake_.client_properties()) {
    if (k == "product" && v == kPeerProduct) return true;
  }
  return false;
}

uint64_t SubscriptionRoom::coalesce_limit() const {
  // A joined chunk stays within the frame size both sides agreed on.
  uint64_t limit = settings_.coalesce_bytes;
  const uint32_t frame_max = handshake_.frame_max();
  if (frame_max > 0) {
    const uint64_t fixed = proto::deliver_head_size(handshake_.deliver_version());
    limit = std::min<uint64_t>(limit, frame_max > fixed ? frame_max - fixed : 0);
  }
  return limit;
}

void SubscriptionRoom::unavailable(const std::string& stream) {
  send_message(session_,
               MetadataUpdate{ResponseCode::stream_not_available, session_.client_name(stream)});
}

void SubscriptionRoom::start_delivery(const SubPtr& sub, const log::OffsetSpec& spec,
                                      std::optional<uint64_t> last_below) {
  using ReaderResult = Result<std::unique_ptr<tier::StreamReader>>;
  run_task<ReaderResult>(
      tasks_, session_.strand(), kStreamOpDeadline, "open reader of " + sub->stream,
      [stream = sub->served->stream(), spec, last_below]() -> ReaderResult {
        // `last` as of the answer: the chunk holding the last offset
        // committed then, delivered whole from its first offset.
        if (spec.kind == log::OffsetSpec::Kind::last && last_below && *last_below > 0) {
          if (auto id = stream->chunk_id_of(*last_below - 1)) {
            return stream->open_reader(log::OffsetSpec::at_offset(*id));
          }
        }
        return stream->open_reader(spec);
      },
      [hold = session_.hold(), this, sub, gen = sub->generation](TaskOutcome<ReaderResult> out) {
        on_reader(sub, gen, std::move(out));
      });
}

void SubscriptionRoom::on_reader(const SubPtr& sub, uint64_t generation,
                                 TaskOutcome<Result<std::unique_ptr<tier::StreamReader>>> out) {
  if (session_.closed() || sub->closed || sub->generation != generation) return;
  if (out.end != TaskEnd::completed || !out.value->ok()) {
    const Error& e = out.end != TaskEnd::completed ? out.error : out.value->error();
    // The subscription was answered already: the client learns of the
    // failure as the stream becoming unavailable to it.
    spdlog::warn("subscription {} on {}: opening its reader: {}", sub->id, sub->stream,
                 e.to_string());
    unavailable(sub->stream);
    return;
  }
  DeliveryOptions opts;
  opts.subscription_id = sub->id;
  opts.version = handshake_.deliver_version();
  opts.coalesce_bytes = coalesce_limit();
  opts.filter = sub->filter;
  opts.use_sendfile = session_.sendfile();
  opts.outbound = &counters_.outbound;
  // A copy takes the owner's tail whatever the stream delivers to
  // consumers (a remote-confirmed stream only what the bucket holds): what
  // it copies is what a takeover on its node keeps. (The append path's
  // lease fence keeps a deposed owner from writing more.) Only while this
  // node's lease holds, though: a deposed owner — frozen past its lease,
  // then thawed — sends its copies nothing more, not even what it wrote
  // before, which the new owner may hold other chunks in place of.
  std::shared_ptr<DeliveryLimit> limit = sub->served->delivery_limit();
  if (sub->copy) {
    opts.copy = true;
    opts.locate = false;
    opts.use_sendfile = false;
    opts.coalesce_bytes = 0;
    opts.filter = nullptr;
    limit = lease_limit(sub->served->stream());
    // Every credit after the first acknowledges a chunk the copy holds.
    if (auto acks = sub->served->replica_acks(); acks && !sub->copy_node.empty()) {
      opts.on_copy_ack = [acks, node = sub->copy_node](uint64_t next) { acks->ack(node, next); };
    }
  }
  std::weak_ptr<void> weak = session_.hold();
  sub->delivery = Delivery::start(
      std::move(*out.value).value(), sub->served->stream(), session_.frames(), session_.strand(),
      tasks_, opts, uint16_t(std::min<uint32_t>(sub->credit, 65535)),
      [this, weak, id = sub->id, stream = sub->stream](const Error& e) {
        spdlog::warn("subscription {} on {}: delivery stopped: {}", id, stream, e.to_string());
        if (auto hold = weak.lock()) unavailable(stream);
      },
      std::move(limit));
  sub->credit = 0;
}

void SubscriptionRoom::on(const CreditRequest& r) {
  auto it = subscriptions_.find(r.subscription_id);
  if (it == subscriptions_.end()) {
    send_message(session_,
                 CreditResponse{ResponseCode::subscription_id_does_not_exist, r.subscription_id});
    return;
  }
  const SubPtr& s = it->second;
  if (!s->active) {
    // As RabbitMQ: credit for a consumer its group has not activated (left
    // over from when it was active) is kept for its activation, and the
    // client is told.
    s->credit = std::min<uint32_t>(s->credit + r.credit, 65535);
    send_message(session_, CreditResponse{ResponseCode::precondition_failed, r.subscription_id});
    return;
  }
  if (s->replica) {
    s->replica->add_credit(r.credit);
  } else if (s->delivery) {
    s->delivery->add_credit(r.credit);
  } else {
    s->credit = std::min<uint32_t>(s->credit + r.credit, 65535);
  }
}

void SubscriptionRoom::stop_subscription(const SubPtr& s) {
  s->closed = true;
  if (s->delivery) s->delivery->stop();
  if (s->replica) s->replica->stop();
  counters_.consumers -= 1;
  if (!s->sac_name.empty()) {
    ConsumerRef ref{session_.id(), s->id};
    std::string stream = s->stream, name = s->sac_name;
    sac_.step([&](SacGroups& g, SacTime now) { return g.unsubscribe(stream, name, ref, now); });
  }
}

void SubscriptionRoom::on(const UnsubscribeRequest& r) {
  auto it = subscriptions_.find(r.subscription_id);
  if (it == subscriptions_.end()) {
    respond_code(session_, kUnsubscribe, r.correlation_id,
                 ResponseCode::subscription_id_does_not_exist);
    return;
  }
  SubPtr s = it->second;
  subscriptions_.erase(it);
  stop_subscription(s);
  respond_code(session_, kUnsubscribe, r.correlation_id, ResponseCode::ok);
}

// ---- single active consumer ----

void SubscriptionRoom::sac_effect(const SacEffect& e) {
  asio::post(session_.strand(), [hold = session_.hold(), this, e] {
    if (!session_.closed()) run_sac_effect(e);
  });
}

void SubscriptionRoom::run_sac_effect(const SacEffect& e) {
  if (e.kind == SacEffect::Kind::timed_out) {
    // As RabbitMQ does when a request to the client times out: the
    // connection is closed (without a Close request, which the JavaScript
    // client 1.0.0 cannot decode); its other consumers leave their groups.
    spdlog::info(
        "connection {} ({}): closing: subscription {} did not answer ConsumerUpdate within {} ms",
        session_.id(), session_.peer(), e.consumer.subscription,
        settings_.consumer_update_timeout_ms);
    session_.close_now("ConsumerUpdate not answered in time");
    return;
  }
  auto it = subscriptions_.find(e.consumer.subscription);
  if (it == subscriptions_.end()) return;
  SubPtr s = it->second;
  switch (e.kind) {
    case SacEffect::Kind::send_update: {
      uint32_t corr = session_.next_correlation();
      pending_updates_[corr] = s->id;
      send_message(session_, ConsumerUpdateRequest{corr, s->id, uint8_t(e.active ? 1 : 0)});
      break;
    }
    case SacEffect::Kind::activate:
      s->generation += 1;
      s->active = true;
      if (s->delivery) s->delivery->stop();
      s->delivery.reset();
      start_delivery(s, to_log_spec(s->answered.value_or(s->spec)));
      s->answered.reset();
      break;
    case SacEffect::Kind::deactivate:
      s->generation += 1;
      s->active = false;
      if (s->delivery) {
        // Credit not used by the stepping-down delivery stays with the
        // subscription for its next activation.
        s->credit = s->delivery->credit();
        s->delivery->stop();
      }
      s->delivery.reset();
      break;
    case SacEffect::Kind::timed_out:  // handled above
      break;
  }
}

void SubscriptionRoom::on(const ConsumerUpdateResponse& r) {
  auto p = pending_updates_.find(r.correlation_id);
  if (p == pending_updates_.end()) return;  // stale or unknown: nothing waits for it
  uint8_t sub_id = p->second;
  pending_updates_.erase(p);
  auto it = subscriptions_.find(sub_id);
  if (it == subscriptions_.end() || it->second->sac_name.empty()) return;
  SubPtr s = it->second;
  // Offset type none: an active consumer starts where it subscribed, an
  // inactive one has nothing to say (the Java client's answer to a
  // deactivation). Either way the group goes on.
  s->answered.reset();
  if (r.code == ResponseCode::ok && r.offset) s->answered = *r.offset;
  ConsumerRef ref{session_.id(), sub_id};
  std::string stream = s->stream, name = s->sac_name;
  sac_.step([&](SacGroups& g, SacTime now) {
    return g.consumer_update_answered(stream, name, ref, now);
  });
}

// Where a subscription with this offset spec would start: the first offset
// of the first chunk it would be delivered (the end of the stream when
// there is none yet).
void SubscriptionRoom::on(const ResolveOffsetSpecRequest& r) {
  if (!session_.allowed(Permission::read, r.stream, "resolve offset spec")) {
    send_message(session_, ResolveOffsetSpecResponse{r.correlation_id, ResponseCode::access_refused,
                                                     uint16_t(OffsetType::offset), 0});
    return;
  }
  auto s = streams_.served(r.stream);
  if (!s.ok()) {
    send_message(session_,
                 ResolveOffsetSpecResponse{r.correlation_id, streams_.missing_code(r.stream),
                                           uint16_t(OffsetType::offset), 0});
    return;
  }
  using Resolved = Result<uint64_t>;
  run_task<Resolved>(
      tasks_, session_.strand(), kStreamOpDeadline, "resolve an offset spec on " + r.stream,
      [stream = (*s)->stream(), spec = to_log_spec(r.offset)]() -> Resolved {
        STRATA_ASSIGN_OR_RETURN(auto reader, stream->open_reader(spec));
        // The chunk a subscription would be sent first (osiris resolves an
        // offset to the id of the chunk holding it); past the end, where
        // the next chunk will start.
        STRATA_ASSIGN_OR_RETURN(auto first, reader->next_chunk_location());
        return first ? first->header.first_offset : reader->next_offset();
      },
      [hold = session_.hold(), this, corr = r.correlation_id,
       name = r.stream](TaskOutcome<Resolved> out) {
        ResolveOffsetSpecResponse resp{corr, ResponseCode::ok, uint16_t(OffsetType::offset), 0};
        if (out.end == TaskEnd::completed && out.value->ok()) {
          resp.offset = **out.value;
        } else {
          const Error& e = out.end == TaskEnd::completed ? out.value->error() : out.error;
          spdlog::info("connection {}: resolving an offset spec on {}: {}", session_.id(), name,
                       e.to_string());
          resp.code = ResponseCode::no_offset;
        }
        send_message(session_, resp);
      });
}

// ---- the stream or the connection goes ----

bool SubscriptionRoom::drop_stream(const std::string& stream) {
  bool affected = false;
  for (auto it = subscriptions_.begin(); it != subscriptions_.end();) {
    if (it->second->stream == stream) {
      SubPtr s = it->second;
      it = subscriptions_.erase(it);
      stop_subscription(s);
      affected = true;
    } else {
      ++it;
    }
  }
  return affected;
}

void SubscriptionRoom::close() {
  bool had_sac = false;
  for (auto& [id, s] : subscriptions_) {
    had_sac = had_sac || !s->sac_name.empty();
    s->closed = true;
    if (s->delivery) s->delivery->stop();
    if (s->replica) s->replica->stop();
  }
  counters_.consumers -= subscriptions_.size();
  subscriptions_.clear();
  if (had_sac) {
    uint64_t me = session_.id();
    sac_.step([me](SacGroups& g, SacTime now) { return g.connection_gone(me, now); });
  }
}

namespace {
std::string_view spec_name(proto::OffsetType t) {
  switch (t) {
    case proto::OffsetType::first:
      return "first";
    case proto::OffsetType::last:
      return "last";
    case proto::OffsetType::next:
      return "next";
    case proto::OffsetType::offset:
      return "offset";
    case proto::OffsetType::timestamp:
      return "timestamp";
  }
  return "?";
}
}  // namespace

void SubscriptionRoom::tally(ClientTally* t) const {
  for (const auto& [id, sub] : subscriptions_) {
    uint64_t lag = sub->delivery ? sub->delivery->lag() : 0;
    if (sub->replica) lag = sub->replica->lag().value_or(0);
    t->consumers.push_back({sub->stream, lag, sub->group});
  }
}

nlohmann::json SubscriptionRoom::describe() const {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [id, sub] : subscriptions_) {
    nlohmann::json j = {{"subscription_id", id},
                        {"stream", sub->stream},
                        {"offset_spec", spec_name(sub->spec.type)},
                        {"replica", sub->replica != nullptr}};
    if (sub->spec.type == proto::OffsetType::offset ||
        sub->spec.type == proto::OffsetType::timestamp) {
      j["offset_spec_value"] = sub->spec.value;
    }
    if (sub->delivery) {
      const DeliveryStats st = sub->delivery->stats();
      j["credit"] = sub->delivery->credit();
      j["chunks_delivered"] = st.chunks;
      j["messages_delivered"] = st.records;
      j["bytes_delivered"] = st.bytes;
      // RabbitMQ's names: the next offset to deliver, and the committed
      // messages after it.
      j["offset"] = st.next_offset;
      j["offset_lag"] = sub->delivery->lag();
      const node::LagBytes lb = sub->delivery->lag_bytes();
      j["offset_lag_bytes"] = lb.bytes;
      if (!lb.exact) j["offset_lag_bytes_estimated"] = true;
    } else {
      j["credit"] = sub->credit;
    }
    if (sub->replica) {
      // A replica knows the owner's newest chunks only as they come: its
      // lag is a lower bound.
      if (auto next = sub->replica->next_offset()) j["offset"] = *next;
      if (auto lag = sub->replica->lag()) {
        j["offset_lag"] = *lag;
        j["offset_lag_estimated"] = true;
      }
    }
    if (!sub->group.empty()) j["consumer_group"] = sub->group;
    if (!sub->sac_name.empty()) {
      j["single_active_consumer"] = sub->sac_name;
      j["active"] = sub->active;
    }
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace strata::server
