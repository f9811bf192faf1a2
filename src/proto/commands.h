// One struct per stream protocol command, with `encode(msg, &out)` appending
// the whole frame (size prefix included) and `decode<T>(frame_body)` reading
// one from a frame body (key and version first, size prefix already split
// off by split_frame). Field layouts follow RabbitMQ's PROTOCOL.adoc; see
// docs/formats/protocol-frames.md. Views (BytesView) point into the
// decoded frame and live as long as its buffer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "proto/frame.h"
#include "proto/osiris_chunk.h"
#include "proto/wire.h"

namespace strata::proto {

// Every struct has kKey (the key on the wire), kMinVersion/kMaxVersion (the
// versions strata reads) and write(WireWriter&)/read(WireReader&) for the
// fields after key and version. Structs with a `version` member encode it;
// the others encode kMaxVersion.

// A response that carries only a correlation id and a code.
template <uint16_t RequestKey>
struct CodeResponse {
  static constexpr uint16_t kKey = RequestKey | kResponseFlag;
  static constexpr uint16_t kMinVersion = 1, kMaxVersion = 1;
  uint32_t correlation_id = 0;
  ResponseCode code = ResponseCode::ok;
  void write(WireWriter& w) const {
    w.u32(correlation_id);
    w.u16(uint16_t(code));
  }
  void read(WireReader& r) {
    correlation_id = r.u32("correlation_id");
    code = ResponseCode(r.u16("response_code"));
  }
  bool operator==(const CodeResponse&) const = default;
};

#define STRATA_PROTO_MESSAGE(Name, key, minv, maxv)                 \
  static constexpr uint16_t kKey = key;                             \
  static constexpr uint16_t kMinVersion = minv, kMaxVersion = maxv; \
  void write(WireWriter& w) const;                                  \
  void read(WireReader& r);                                         \
  bool operator==(const Name&) const = default

struct DeclarePublisherRequest {
  STRATA_PROTO_MESSAGE(DeclarePublisherRequest, kDeclarePublisher, 1, 1);
  uint32_t correlation_id = 0;
  uint8_t publisher_id = 0;
  std::string reference;  // empty: none (a null string reads as empty too)
  std::string stream;
};
using DeclarePublisherResponse = CodeResponse<kDeclarePublisher>;

// One message of a Publish frame: the osiris entry exactly as the client
// sent it (simple or sub-batch), a view into the frame.
struct PublishedMessage {
  uint64_t publishing_id = 0;
  std::optional<BytesView> filter_value;  // version 2 only
  BytesView entry;                        // osiris entry, header included
  bool operator==(const PublishedMessage&) const = default;
};

struct PublishRequest {
  STRATA_PROTO_MESSAGE(PublishRequest, kPublish, 1, 2);
  uint16_t version = 1;
  uint8_t publisher_id = 0;
  std::vector<PublishedMessage> messages;
};

struct PublishConfirm {
  STRATA_PROTO_MESSAGE(PublishConfirm, kPublishConfirm, 1, 1);
  uint8_t publisher_id = 0;
  std::vector<uint64_t> publishing_ids;
};

struct PublishingError {
  uint64_t publishing_id = 0;
  ResponseCode code = ResponseCode::ok;
  bool operator==(const PublishingError&) const = default;
};
struct PublishError {
  STRATA_PROTO_MESSAGE(PublishError, kPublishError, 1, 1);
  uint8_t publisher_id = 0;
  std::vector<PublishingError> errors;
};

struct QueryPublisherSequenceRequest {
  STRATA_PROTO_MESSAGE(QueryPublisherSequenceRequest, kQueryPublisherSequence, 1, 1);
  uint32_t correlation_id = 0;
  std::string reference;
  std::string stream;
};
struct QueryPublisherSequenceResponse {
  STRATA_PROTO_MESSAGE(QueryPublisherSequenceResponse, kQueryPublisherSequence | kResponseFlag, 1,
                       1);
  uint32_t correlation_id = 0;
  ResponseCode code = ResponseCode::ok;
  uint64_t sequence = 0;
};

struct DeletePublisherRequest {
  STRATA_PROTO_MESSAGE(DeletePublisherRequest, kDeletePublisher, 1, 1);
  uint32_t correlation_id = 0;
  uint8_t publisher_id = 0;
};
using DeletePublisherResponse = CodeResponse<kDeletePublisher>;

enum class OffsetType : uint16_t { first = 1, last = 2, next = 3, offset = 4, timestamp = 5 };

struct OffsetSpec {
  OffsetType type = OffsetType::next;
  // The offset (type offset) or the timestamp in ms (type timestamp);
  // absent on the wire for the other types.
  int64_t value = 0;
  bool operator==(const OffsetSpec&) const = default;
  void write(WireWriter& w) const;
  void read(WireReader& r);
  // The value after a type already read (refuses types outside 1..5).
  void read_after_type(WireReader& r, uint16_t type);
};

// A ConsumerUpdate reply may carry offset type 0, "none": start where the
// subscription said (active), or nothing to say (inactive). The Java client
// answers a deactivation with it.
constexpr uint16_t kOffsetTypeNone = 0;

struct SubscribeRequest {
  STRATA_PROTO_MESSAGE(SubscribeRequest, kSubscribe, 1, 1);
  uint32_t correlation_id = 0;
  uint8_t subscription_id = 0;
  std::string stream;
  OffsetSpec offset;
  uint16_t credit = 0;
  Properties properties;
};
using SubscribeResponse = CodeResponse<kSubscribe>;

// Deliver, decoded: the whole osiris chunk (48-byte header, filter, data,
// trailer) as a view. To send one without copying the chunk, see
// encode_deliver_head.
struct DeliverFrame {
  STRATA_PROTO_MESSAGE(DeliverFrame, kDeliver, 1, 2);
  uint16_t version = 1;
  uint8_t subscription_id = 0;
  uint64_t committed_chunk_id = 0;  // version 2 only
  BytesView chunk;
};

// Appends the head of a Deliver frame — size, key, version, subscription id,
// [committed chunk id,] and the 48-byte osiris header — and returns how many
// bytes the caller must send right after it: exactly the chunk's filter, data
// and trailer (h.body_len()), so the frame's size field adds up.
uint64_t encode_deliver_head(uint16_t version, uint8_t subscription_id, uint64_t committed_chunk_id,
                             const OsirisChunkHeader& h, Bytes* out);
// Size of the head encode_deliver_head writes.
constexpr size_t deliver_head_size(uint16_t version) {
  return 4 + 4 + 1 + (version >= 2 ? 8 : 0) + kOsirisChunkHeaderSize;
}

struct CreditRequest {
  STRATA_PROTO_MESSAGE(CreditRequest, kCredit, 1, 1);
  uint8_t subscription_id = 0;
  uint16_t credit = 0;
};
// Sent only when a Credit fails (e.g. unknown subscription): no correlation id.
struct CreditResponse {
  STRATA_PROTO_MESSAGE(CreditResponse, kCredit | kResponseFlag, 1, 1);
  ResponseCode code = ResponseCode::ok;
  uint8_t subscription_id = 0;
};

struct StoreOffsetRequest {
  STRATA_PROTO_MESSAGE(StoreOffsetRequest, kStoreOffset, 1, 1);
  std::string reference;
  std::string stream;
  uint64_t offset = 0;
};

struct QueryOffsetRequest {
  STRATA_PROTO_MESSAGE(QueryOffsetRequest, kQueryOffset, 1, 1);
  uint32_t correlation_id = 0;
  std::string reference;
  std::string stream;
};
struct QueryOffsetResponse {
  STRATA_PROTO_MESSAGE(QueryOffsetResponse, kQueryOffset | kResponseFlag, 1, 1);
  uint32_t correlation_id = 0;
  ResponseCode code = ResponseCode::ok;
  uint64_t offset = 0;
};

struct UnsubscribeRequest {
  STRATA_PROTO_MESSAGE(UnsubscribeRequest, kUnsubscribe, 1, 1);
  uint32_t correlation_id = 0;
  uint8_t subscription_id = 0;
};
using UnsubscribeResponse = CodeResponse<kUnsubscribe>;

struct CreateStreamRequest {
  STRATA_PROTO_MESSAGE(CreateStreamRequest, kCreate, 1, 1);
  uint32_t correlation_id = 0;
  std::string stream;
  Properties arguments;
};
using CreateStreamResponse = CodeResponse<kCreate>;

struct DeleteStreamRequest {
  STRATA_PROTO_MESSAGE(DeleteStreamRequest, kDelete, 1, 1);
  uint32_t correlation_id = 0;
  std::string stream;
};
using DeleteStreamResponse = CodeResponse<kDelete>;

struct MetadataRequest {
  STRATA_PROTO_MESSAGE(MetadataRequest, kMetadata, 1, 1);
  uint32_t correlation_id = 0;
  std::vector<std::string> streams;
};
struct Broker {
  uint16_t reference = 0;
  std::string host;
  uint32_t port = 0;
  bool operator==(const Broker&) const = default;
};
struct StreamMetadata {
  std::string stream;
  ResponseCode code = ResponseCode::ok;
  uint16_t leader_reference = 0;
  std::vector<uint16_t> replica_references;
  bool operator==(const StreamMetadata&) const = default;
};
// No top-level response code: each stream carries its own.
struct MetadataResponse {
  STRATA_PROTO_MESSAGE(MetadataResponse, kMetadata | kResponseFlag, 1, 1);
  uint32_t correlation_id = 0;
  std::vector<Broker> brokers;
  std::vector<StreamMetadata> streams;
};

struct MetadataUpdate {
  STRATA_PROTO_MESSAGE(MetadataUpdate, kMetadataUpdate, 1, 1);
  ResponseCode code = ResponseCode::stream_not_available;
  std::string stream;
};

struct PeerPropertiesRequest {
  STRATA_PROTO_MESSAGE(PeerPropertiesRequest, kPeerProperties, 1, 1);
  uint32_t correlation_id = 0;
  Properties properties;
};
struct PeerPropertiesResponse {
  STRATA_PROTO_MESSAGE(PeerPropertiesResponse, kPeerProperties | kResponseFlag, 1, 1);
  uint32_t correlation_id = 0;
  ResponseCode code = ResponseCode::ok;
  Properties properties;
};

struct SaslHandshakeRequest {
  STRATA_PROTO_MESSAGE(SaslHandshakeRequest, kSaslHandshake, 1, 1);
  uint32_t correlation_id = 0;
};
struct SaslHandshakeResponse {
  STRATA_PROTO_MESSAGE(SaslHandshakeResponse, kSaslHandshake | kResponseFlag, 1, 1);
  uint32_t correlation_id = 0;
  ResponseCode code = ResponseCode::ok;
  std::vector<std::string> mechanisms;
};

struct SaslAuthenticateRequest {
  STRATA_PROTO_MESSAGE(SaslAuthenticateRequest, kSaslAuthenticate, 1, 1);
  uint32_t correlation_id = 0;
  std::string mechanism;
  std::string data;  // PLAIN: "\0user\0password"
};
// The opaque data is present only for a challenge; servers omit it otherwise.
struct SaslAuthenticateResponse {
  STRATA_PROTO_MESSAGE(SaslAuthenticateResponse, kSaslAuthenticate | kResponseFlag, 1, 1);
  uint32_t correlation_id = 0;
  ResponseCode code = ResponseCode::ok;
  std::optional<std::string> data;
};

// Tune goes both ways with the same key (the client's answer is not flagged).
struct TuneFrame {
  STRATA_PROTO_MESSAGE(TuneFrame, kTune, 1, 1);
  uint32_t frame_max = 0;  // bytes, 0 = no limit
  uint32_t heartbeat = 0;  // seconds, 0 = none
};

struct OpenRequest {
  STRATA_PROTO_MESSAGE(OpenRequest, kOpen, 1, 1);
  uint32_t correlation_id = 0;
  std::string virtual_host;
};
// Connection properties (advertised_host, advertised_port) follow an ok code.
struct OpenResponse {
  STRATA_PROTO_MESSAGE(OpenResponse, kOpen | kResponseFlag, 1, 1);
  uint32_t correlation_id = 0;
  ResponseCode code = ResponseCode::ok;
  Properties properties;
};

struct CloseRequest {
  STRATA_PROTO_MESSAGE(CloseRequest, kClose, 1, 1);
  uint32_t correlation_id = 0;
  ResponseCode code = ResponseCode::ok;
  std::string reason;
};
using CloseResponse = CodeResponse<kClose>;

struct HeartbeatFrame {
  STRATA_PROTO_MESSAGE(HeartbeatFrame, kHeartbeat, 1, 1);
};

struct RouteRequest {
  STRATA_PROTO_MESSAGE(RouteRequest, kRoute, 1, 1);
  uint32_t correlation_id = 0;
  std::string routing_key;
  std::string super_stream;
};
struct RouteResponse {
  STRATA_PROTO_MESSAGE(RouteResponse, kRoute | kResponseFlag, 1, 1);
  uint32_t correlation_id = 0;
  ResponseCode code = ResponseCode::ok;
  std::vector<std::string> streams;
};

struct PartitionsRequest {
  STRATA_PROTO_MESSAGE(PartitionsRequest, kPartitions, 1, 1);
  uint32_t correlation_id = 0;
  std::string super_stream;
};
struct PartitionsResponse {
  STRATA_PROTO_MESSAGE(PartitionsResponse, kPartitions | kResponseFlag, 1, 1);
  uint32_t correlation_id = 0;
  ResponseCode code = ResponseCode::ok;
  std::vector<std::string> streams;
};

// Server to client: this subscription became active (or not) under single
// active consumer; the client answers with where to start.
struct ConsumerUpdateRequest {
  STRATA_PROTO_MESSAGE(ConsumerUpdateRequest, kConsumerUpdate, 1, 1);
  uint32_t correlation_id = 0;
  uint8_t subscription_id = 0;
  uint8_t active = 0;
};
struct ConsumerUpdateResponse {
  STRATA_PROTO_MESSAGE(ConsumerUpdateResponse, kConsumerUpdate | kResponseFlag, 1, 1);
  uint32_t correlation_id = 0;
  ResponseCode code = ResponseCode::ok;
  std::optional<OffsetSpec> offset;  // none (type 0) when empty
};

struct CommandVersion {
  uint16_t key = 0;
  uint16_t min_version = 1;
  uint16_t max_version = 1;
  bool operator==(const CommandVersion&) const = default;
};
struct ExchangeCommandVersionsRequest {
  STRATA_PROTO_MESSAGE(ExchangeCommandVersionsRequest, kExchangeCommandVersions, 1, 1);
  uint32_t correlation_id = 0;
  std::vector<CommandVersion> versions;
};
struct ExchangeCommandVersionsResponse {
  STRATA_PROTO_MESSAGE(ExchangeCommandVersionsResponse, kExchangeCommandVersions | kResponseFlag, 1,
                       1);
  uint32_t correlation_id = 0;
  ResponseCode code = ResponseCode::ok;
  std::vector<CommandVersion> versions;
};

struct StreamStatsRequest {
  STRATA_PROTO_MESSAGE(StreamStatsRequest, kStreamStats, 1, 1);
  uint32_t correlation_id = 0;
  std::string stream;
};
// committed_chunk_id, first_chunk_id, last_chunk_id (int64).
struct StreamStatsResponse {
  STRATA_PROTO_MESSAGE(StreamStatsResponse, kStreamStats | kResponseFlag, 1, 1);
  uint32_t correlation_id = 0;
  ResponseCode code = ResponseCode::ok;
  std::vector<std::pair<std::string, int64_t>> stats;
};

struct CreateSuperStreamRequest {
  STRATA_PROTO_MESSAGE(CreateSuperStreamRequest, kCreateSuperStream, 1, 1);
  uint32_t correlation_id = 0;
  std::string name;
  std::vector<std::string> partitions;
  std::vector<std::string> binding_keys;
  Properties arguments;
};
using CreateSuperStreamResponse = CodeResponse<kCreateSuperStream>;

struct DeleteSuperStreamRequest {
  STRATA_PROTO_MESSAGE(DeleteSuperStreamRequest, kDeleteSuperStream, 1, 1);
  uint32_t correlation_id = 0;
  std::string name;
};
using DeleteSuperStreamResponse = CodeResponse<kDeleteSuperStream>;

// Where an offset spec points in a stream, without subscribing (RabbitMQ
// 4.3). Properties as Subscribe's (filter.N, match-unfiltered, ...).
struct ResolveOffsetSpecRequest {
  STRATA_PROTO_MESSAGE(ResolveOffsetSpecRequest, kResolveOffsetSpec, 1, 1);
  uint32_t correlation_id = 0;
  std::string stream;
  OffsetSpec offset;
  Properties properties;
};
// The resolved value's type is always offset (4).
struct ResolveOffsetSpecResponse {
  STRATA_PROTO_MESSAGE(ResolveOffsetSpecResponse, kResolveOffsetSpec | kResponseFlag, 1, 1);
  uint32_t correlation_id = 0;
  ResponseCode code = ResponseCode::ok;
  uint16_t offset_type = uint16_t(OffsetType::offset);
  uint64_t offset = 0;
};

#undef STRATA_PROTO_MESSAGE

namespace detail {
template <typename T>
concept HasVersion = requires(const T& t) {
  t.version;
};
template <typename T>
uint16_t version_of(const T& m) {
  if constexpr (HasVersion<T>) {
    return m.version;
  } else {
    return T::kMaxVersion;
  }
}
// Checks the key and version and reads the fields; `rest` is after the head.
template <typename T>
Result<T> decode_fields(uint16_t version, BytesView rest);
}  // namespace detail

// Appends the whole frame (size prefix included) for `m` to `out`.
template <typename T>
void encode(const T& m, Bytes* out) {
  size_t start = begin_frame(out, T::kKey, detail::version_of(m));
  WireWriter w(out);
  m.write(w);
  finish_frame(out, start);
}

// Decodes a frame body (after the size prefix) as T. Errors: Errc::
// unsupported_version if the key is not T's or the version is not one strata
// reads; Errc::corrupt for truncated fields, negative lengths, counts that
// cannot fit and trailing bytes — each naming the command and field.
template <typename T>
Result<T> decode(BytesView frame_body) {
  auto head = peek_head(frame_body);
  if (!head.ok()) return std::move(head).error();
  if (head->key != T::kKey) {
    return make_error(Errc::unsupported_version,
                      command_name(T::kKey) + ": frame has key " + command_name(head->key));
  }
  return detail::decode_fields<T>(head->version, frame_body.substr(kFrameHeadBytes));
}

namespace detail {
template <typename T>
Result<T> decode_fields(uint16_t version, BytesView rest) {
  if (version < T::kMinVersion || version > T::kMaxVersion) {
    return make_error(Errc::unsupported_version,
                      command_name(T::kKey) + ": unsupported version " + std::to_string(version));
  }
  T m{};
  if constexpr (HasVersion<T>) m.version = version;
  WireReader r(rest, command_name(T::kKey), kFrameHeadBytes);
  m.read(r);
  r.expect_end();
  if (!r.ok()) return r.error();
  return m;
}
}  // namespace detail

}  // namespace strata::proto
