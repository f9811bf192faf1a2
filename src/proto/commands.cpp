#include "proto/commands.h"

#include <fmt/format.h>

#include "common/endian.h"

namespace strata::proto {

void DeclarePublisherRequest::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.u8(publisher_id);
  // No reference is an empty string: RabbitMQ 3.10 reads the length as
  // unsigned and answers a null (-1) with "unknown frame".
  w.string(reference);
  w.string(stream);
}
void DeclarePublisherRequest::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  publisher_id = r.u8("publisher_id");
  reference = r.string("publisher_reference");
  stream = r.string("stream");
}

void PublishRequest::write(WireWriter& w) const {
  w.u8(publisher_id);
  w.count(messages.size());
  for (const auto& m : messages) {
    w.u64(m.publishing_id);
    if (version >= 2) w.nullable_string(m.filter_value);
    w.raw(m.entry);
  }
}
void PublishRequest::read(WireReader& r) {
  publisher_id = r.u8("publisher_id");
  // Smallest message: publishing id + a simple entry's 4-byte header
  // (+ a 2-byte filter length in version 2).
  uint32_t n = r.count("messages", version >= 2 ? 14 : 12);
  messages.clear();
  messages.reserve(n);
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    PublishedMessage m;
    m.publishing_id = r.u64("publishing_id");
    if (version >= 2) m.filter_value = r.nullable_string_view("filter_value");
    if (!r.ok()) break;
    auto e = parse_osiris_entry(r.rest());
    if (!e.ok()) {
      r.fail("message", e.error().message);
      break;
    }
    m.entry = r.raw(e->encoded.size(), "message");
    messages.push_back(m);
  }
}

void PublishConfirm::write(WireWriter& w) const {
  w.u8(publisher_id);
  w.count(publishing_ids.size());
  for (uint64_t id : publishing_ids) w.u64(id);
}
void PublishConfirm::read(WireReader& r) {
  publisher_id = r.u8("publisher_id");
  uint32_t n = r.count("publishing_ids", 8);
  publishing_ids.resize(n);
  for (uint32_t i = 0; i < n; ++i) publishing_ids[i] = r.u64("publishing_id");
}

void PublishError::write(WireWriter& w) const {
  w.u8(publisher_id);
  w.count(errors.size());
  for (const auto& e : errors) {
    w.u64(e.publishing_id);
    w.u16(uint16_t(e.code));
  }
}
void PublishError::read(WireReader& r) {
  publisher_id = r.u8("publisher_id");
  uint32_t n = r.count("errors", 10);
  errors.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    errors[i].publishing_id = r.u64("publishing_id");
    errors[i].code = ResponseCode(r.u16("code"));
  }
}

void QueryPublisherSequenceRequest::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.string(reference);
  w.string(stream);
}
void QueryPublisherSequenceRequest::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  reference = r.string("publisher_reference");
  stream = r.string("stream");
}
void QueryPublisherSequenceResponse::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.u16(uint16_t(code));
  w.u64(sequence);
}
void QueryPublisherSequenceResponse::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  code = ResponseCode(r.u16("response_code"));
  sequence = r.u64("sequence");
}

void DeletePublisherRequest::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.u8(publisher_id);
}
void DeletePublisherRequest::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  publisher_id = r.u8("publisher_id");
}

void OffsetSpec::write(WireWriter& w) const {
  w.u16(uint16_t(type));
  if (type == OffsetType::offset || type == OffsetType::timestamp) w.i64(value);
}
void OffsetSpec::read(WireReader& r) {
  uint16_t t = r.u16("offset_type");
  if (!r.ok()) return;
  read_after_type(r, t);
}
void OffsetSpec::read_after_type(WireReader& r, uint16_t t) {
  if (t < uint16_t(OffsetType::first) || t > uint16_t(OffsetType::timestamp)) {
    r.fail("offset_type", fmt::format("unknown offset type {}", t));
    return;
  }
  type = OffsetType(t);
  value = 0;
  if (type == OffsetType::offset || type == OffsetType::timestamp) value = r.i64("offset");
}

void SubscribeRequest::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.u8(subscription_id);
  w.string(stream);
  offset.write(w);
  w.u16(credit);
  w.properties(properties);
}
void SubscribeRequest::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  subscription_id = r.u8("subscription_id");
  stream = r.string("stream");
  offset.read(r);
  credit = r.u16("credit");
  // Clients older than 3.9 (and some today) send no properties at all.
  if (r.ok() && r.remaining() == 0) return;
  properties = r.properties("properties");
}

void DeliverFrame::write(WireWriter& w) const {
  w.u8(subscription_id);
  if (version >= 2) w.u64(committed_chunk_id);
  w.raw(chunk);
}
void DeliverFrame::read(WireReader& r) {
  subscription_id = r.u8("subscription_id");
  if (version >= 2) committed_chunk_id = r.u64("committed_chunk_id");
  if (!r.ok()) return;
  auto h = decode_osiris_header(r.rest());
  if (!h.ok()) {
    r.fail("osiris_chunk", h.error().message);
    return;
  }
  if (h->body_len() != r.remaining() - kOsirisChunkHeaderSize) {
    r.fail("osiris_chunk", fmt::format("header says {} bytes follow it, frame has {}",
                                       h->body_len(), r.remaining() - kOsirisChunkHeaderSize));
    return;
  }
  chunk = r.raw(r.remaining(), "osiris_chunk");
}

uint64_t encode_deliver_head(uint16_t version, uint8_t subscription_id, uint64_t committed_chunk_id,
                             const OsirisChunkHeader& h, Bytes* out) {
  size_t start = begin_frame(out, kDeliver, version);
  WireWriter w(out);
  w.u8(subscription_id);
  if (version >= 2) w.u64(committed_chunk_id);
  encode_osiris_header(h, out);
  // The size field counts what the caller sends after this head.
  uint64_t follow = h.body_len();
  uint32_t size = uint32_t(out->size() - start - kFrameSizeBytes + follow);
  put_be32(strata::u8(out->data() + start), size);
  return follow;
}

void CreditRequest::write(WireWriter& w) const {
  w.u8(subscription_id);
  w.u16(credit);
}
void CreditRequest::read(WireReader& r) {
  subscription_id = r.u8("subscription_id");
  credit = r.u16("credit");
}
void CreditResponse::write(WireWriter& w) const {
  w.u16(uint16_t(code));
  w.u8(subscription_id);
}
void CreditResponse::read(WireReader& r) {
  code = ResponseCode(r.u16("response_code"));
  subscription_id = r.u8("subscription_id");
}

void StoreOffsetRequest::write(WireWriter& w) const {
  w.string(reference);
  w.string(stream);
  w.u64(offset);
}
void StoreOffsetRequest::read(WireReader& r) {
  reference = r.string("reference");
  stream = r.string("stream");
  offset = r.u64("offset");
}

void QueryOffsetRequest::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.string(reference);
  w.string(stream);
}
void QueryOffsetRequest::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  reference = r.string("reference");
  stream = r.string("stream");
}
void QueryOffsetResponse::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.u16(uint16_t(code));
  w.u64(offset);
}
void QueryOffsetResponse::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  code = ResponseCode(r.u16("response_code"));
  offset = r.u64("offset");
}

void UnsubscribeRequest::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.u8(subscription_id);
}
void UnsubscribeRequest::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  subscription_id = r.u8("subscription_id");
}

void CreateStreamRequest::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.string(stream);
  w.properties(arguments);
}
void CreateStreamRequest::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  stream = r.string("stream");
  arguments = r.properties("arguments");
}

void DeleteStreamRequest::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.string(stream);
}
void DeleteStreamRequest::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  stream = r.string("stream");
}

void MetadataRequest::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.strings(streams);
}
void MetadataRequest::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  streams = r.strings("streams");
}
void MetadataResponse::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.count(brokers.size());
  for (const auto& b : brokers) {
    w.u16(b.reference);
    w.string(b.host);
    w.u32(b.port);
  }
  w.count(streams.size());
  for (const auto& s : streams) {
    w.string(s.stream);
    w.u16(uint16_t(s.code));
    w.u16(s.leader_reference);
    w.count(s.replica_references.size());
    for (uint16_t ref : s.replica_references) w.u16(ref);
  }
}
void MetadataResponse::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  uint32_t nb = r.count("brokers", 8);
  brokers.resize(nb);
  for (auto& b : brokers) {
    b.reference = r.u16("broker_reference");
    b.host = r.string("broker_host");
    b.port = r.u32("broker_port");
  }
  uint32_t ns = r.count("stream_metadata", 10);
  streams.resize(ns);
  for (auto& s : streams) {
    s.stream = r.string("stream");
    s.code = ResponseCode(r.u16("response_code"));
    s.leader_reference = r.u16("leader_reference");
    uint32_t nr = r.count("replica_references", 2);
    s.replica_references.resize(nr);
    for (auto& ref : s.replica_references) ref = r.u16("replica_reference");
    if (!r.ok()) break;
  }
}

void MetadataUpdate::write(WireWriter& w) const {
  w.u16(uint16_t(code));
  w.string(stream);
}
void MetadataUpdate::read(WireReader& r) {
  code = ResponseCode(r.u16("code"));
  stream = r.string("stream");
}

void PeerPropertiesRequest::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.properties(properties);
}
void PeerPropertiesRequest::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  properties = r.properties("peer_properties");
}
void PeerPropertiesResponse::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.u16(uint16_t(code));
  w.properties(properties);
}
void PeerPropertiesResponse::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  code = ResponseCode(r.u16("response_code"));
  properties = r.properties("peer_properties");
}

void SaslHandshakeRequest::write(WireWriter& w) const {
  w.u32(correlation_id);
}
void SaslHandshakeRequest::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
}
void SaslHandshakeResponse::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.u16(uint16_t(code));
  w.strings(mechanisms);
}
void SaslHandshakeResponse::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  code = ResponseCode(r.u16("response_code"));
  mechanisms = r.strings("mechanisms");
}

void SaslAuthenticateRequest::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.string(mechanism);
  w.bytes(data);
}
void SaslAuthenticateRequest::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  mechanism = r.string("mechanism");
  auto d = r.bytes("sasl_data");
  data = d ? std::string(*d) : std::string();
}
void SaslAuthenticateResponse::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.u16(uint16_t(code));
  if (data) w.bytes(*data);
}
void SaslAuthenticateResponse::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  code = ResponseCode(r.u16("response_code"));
  data.reset();
  if (r.ok() && r.remaining() > 0) {
    auto d = r.bytes("sasl_data");
    if (d) data = std::string(*d);
  }
}

void TuneFrame::write(WireWriter& w) const {
  w.u32(frame_max);
  w.u32(heartbeat);
}
void TuneFrame::read(WireReader& r) {
  frame_max = r.u32("frame_max");
  heartbeat = r.u32("heartbeat");
}

void OpenRequest::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.string(virtual_host);
}
void OpenRequest::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  virtual_host = r.string("virtual_host");
}
void OpenResponse::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.u16(uint16_t(code));
  if (code == ResponseCode::ok || !properties.empty()) w.properties(properties);
}
void OpenResponse::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  code = ResponseCode(r.u16("response_code"));
  properties.clear();
  if (r.ok() && r.remaining() > 0) properties = r.properties("connection_properties");
}

void CloseRequest::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.u16(uint16_t(code));
  w.string(reason);
}
void CloseRequest::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  code = ResponseCode(r.u16("closing_code"));
  reason = r.string("closing_reason");
}

void HeartbeatFrame::write(WireWriter&) const {}
void HeartbeatFrame::read(WireReader&) {}

void RouteRequest::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.string(routing_key);
  w.string(super_stream);
}
void RouteRequest::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  routing_key = r.string("routing_key");
  super_stream = r.string("super_stream");
}
void RouteResponse::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.u16(uint16_t(code));
  w.strings(streams);
}
void RouteResponse::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  code = ResponseCode(r.u16("response_code"));
  streams = r.strings("streams");
}

void PartitionsRequest::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.string(super_stream);
}
void PartitionsRequest::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  super_stream = r.string("super_stream");
}
void PartitionsResponse::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.u16(uint16_t(code));
  w.strings(streams);
}
void PartitionsResponse::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  code = ResponseCode(r.u16("response_code"));
  streams = r.strings("streams");
}

void ConsumerUpdateRequest::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.u8(subscription_id);
  w.u8(active);
}
void ConsumerUpdateRequest::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  subscription_id = r.u8("subscription_id");
  active = r.u8("active");
}
void ConsumerUpdateResponse::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.u16(uint16_t(code));
  if (offset) {
    offset->write(w);
  } else {
    w.u16(kOffsetTypeNone);
  }
}
void ConsumerUpdateResponse::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  code = ResponseCode(r.u16("response_code"));
  uint16_t t = r.u16("offset_type");
  if (!r.ok()) return;
  offset.reset();
  if (t != kOffsetTypeNone) {
    offset.emplace();
    offset->read_after_type(r, t);
  }
  // As RabbitMQ reads it, whatever follows a type without a value is
  // ignored: the Python client (rstream) answers with type 3 "next" and
  // an 8-byte zero value.
  const bool has_value = t == uint16_t(OffsetType::offset) || t == uint16_t(OffsetType::timestamp);
  if (r.ok() && !has_value) r.raw(r.remaining(), "offset");
}

void ResolveOffsetSpecRequest::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.string(stream);
  offset.write(w);
  w.properties(properties);
}
void ResolveOffsetSpecRequest::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  stream = r.string("stream");
  offset.read(r);
  // RabbitMQ reads a request that ends after the offset as one without
  // properties.
  if (r.ok() && r.remaining() > 0) properties = r.properties("properties");
}

void ResolveOffsetSpecResponse::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.u16(uint16_t(code));
  w.u16(offset_type);
  w.u64(offset);
}
void ResolveOffsetSpecResponse::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  code = ResponseCode(r.u16("response_code"));
  offset_type = r.u16("offset_type");
  offset = r.u64("offset");
}

static void write_versions(WireWriter& w, const std::vector<CommandVersion>& v) {
  w.count(v.size());
  for (const auto& c : v) {
    w.u16(c.key);
    w.u16(c.min_version);
    w.u16(c.max_version);
  }
}
static std::vector<CommandVersion> read_versions(WireReader& r) {
  uint32_t n = r.count("command_versions", 6);
  std::vector<CommandVersion> v(n);
  for (auto& c : v) {
    c.key = r.u16("key");
    c.min_version = r.u16("min_version");
    c.max_version = r.u16("max_version");
  }
  return v;
}
void ExchangeCommandVersionsRequest::write(WireWriter& w) const {
  w.u32(correlation_id);
  write_versions(w, versions);
}
void ExchangeCommandVersionsRequest::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  versions = read_versions(r);
}
void ExchangeCommandVersionsResponse::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.u16(uint16_t(code));
  write_versions(w, versions);
}
void ExchangeCommandVersionsResponse::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  code = ResponseCode(r.u16("response_code"));
  versions = read_versions(r);
}

void StreamStatsRequest::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.string(stream);
}
void StreamStatsRequest::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  stream = r.string("stream");
}
void StreamStatsResponse::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.u16(uint16_t(code));
  w.count(stats.size());
  for (const auto& [k, v] : stats) {
    w.string(k);
    w.i64(v);
  }
}
void StreamStatsResponse::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  code = ResponseCode(r.u16("response_code"));
  uint32_t n = r.count("stats", 10);
  stats.clear();
  stats.reserve(n);
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    std::string k = r.string("stat_key");
    int64_t v = r.i64("stat_value");
    stats.emplace_back(std::move(k), v);
  }
}

void CreateSuperStreamRequest::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.string(name);
  w.strings(partitions);
  w.strings(binding_keys);
  w.properties(arguments);
}
void CreateSuperStreamRequest::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  name = r.string("super_stream");
  partitions = r.strings("partitions");
  binding_keys = r.strings("binding_keys");
  arguments = r.properties("arguments");
}

void DeleteSuperStreamRequest::write(WireWriter& w) const {
  w.u32(correlation_id);
  w.string(name);
}
void DeleteSuperStreamRequest::read(WireReader& r) {
  correlation_id = r.u32("correlation_id");
  name = r.string("super_stream");
}

}  // namespace strata::proto
