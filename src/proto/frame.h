// The RabbitMQ Stream protocol's frame level: command keys, response codes
// and splitting a byte stream into frames. A frame is `uint32 size` (bytes
// after the size field) followed by `uint16 key`, `uint16 version` and the
// command's fields, all big-endian. Responses carry the request's key with
// the top bit set. See docs/formats/protocol-frames.md.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/bytes.h"

namespace strata::proto {

constexpr uint16_t kDeclarePublisher = 0x01;
constexpr uint16_t kPublish = 0x02;
constexpr uint16_t kPublishConfirm = 0x03;
constexpr uint16_t kPublishError = 0x04;
constexpr uint16_t kQueryPublisherSequence = 0x05;
constexpr uint16_t kDeletePublisher = 0x06;
constexpr uint16_t kSubscribe = 0x07;
constexpr uint16_t kDeliver = 0x08;
constexpr uint16_t kCredit = 0x09;
constexpr uint16_t kStoreOffset = 0x0a;
constexpr uint16_t kQueryOffset = 0x0b;
constexpr uint16_t kUnsubscribe = 0x0c;
constexpr uint16_t kCreate = 0x0d;
constexpr uint16_t kDelete = 0x0e;
constexpr uint16_t kMetadata = 0x0f;
constexpr uint16_t kMetadataUpdate = 0x10;
constexpr uint16_t kPeerProperties = 0x11;
constexpr uint16_t kSaslHandshake = 0x12;
constexpr uint16_t kSaslAuthenticate = 0x13;
constexpr uint16_t kTune = 0x14;
constexpr uint16_t kOpen = 0x15;
constexpr uint16_t kClose = 0x16;
constexpr uint16_t kHeartbeat = 0x17;
constexpr uint16_t kRoute = 0x18;
constexpr uint16_t kPartitions = 0x19;
constexpr uint16_t kConsumerUpdate = 0x1a;
constexpr uint16_t kExchangeCommandVersions = 0x1b;
constexpr uint16_t kStreamStats = 0x1c;
constexpr uint16_t kCreateSuperStream = 0x1d;
constexpr uint16_t kDeleteSuperStream = 0x1e;
constexpr uint16_t kResolveOffsetSpec = 0x1f;

// Set on the key of a response (0x8001 answers 0x0001).
constexpr uint16_t kResponseFlag = 0x8000;

// Whether a frame a client sends answers a request of the server's. The
// client's Tune answer may carry the response bit (the Java and Go clients
// set it, .NET and JS do not; RabbitMQ takes both) but is the handshake's
// own Tune step either way.
constexpr bool is_client_response(uint16_t key) {
  return (key & kResponseFlag) != 0 && uint16_t(key & ~kResponseFlag) != kTune;
}

enum class ResponseCode : uint16_t {
  ok = 1,
  stream_does_not_exist = 2,
  subscription_id_already_exists = 3,
  subscription_id_does_not_exist = 4,
  stream_already_exists = 5,
  stream_not_available = 6,
  sasl_mechanism_not_supported = 7,
  authentication_failure = 8,
  sasl_error = 9,
  sasl_challenge = 10,
  sasl_authentication_failure_loopback = 11,
  virtual_host_access_failure = 12,
  unknown_frame = 13,
  frame_too_large = 14,
  internal_error = 15,
  access_refused = 16,
  precondition_failed = 17,
  publisher_does_not_exist = 18,
  no_offset = 19,
  sasl_cannot_change_mechanism = 20,
  sasl_cannot_change_username = 21,
};

// "DeclarePublisher", "Deliver", ... for a key with or without the response
// flag ("DeclarePublisherResponse"); "unknown command 0x1234" otherwise.
std::string command_name(uint16_t key);
std::string_view response_code_name(ResponseCode c);

// The size prefix of every frame.
constexpr size_t kFrameSizeBytes = 4;
// key + version, the smallest frame body.
constexpr size_t kFrameHeadBytes = 4;

struct FrameSplit {
  enum Kind { need_more, frame, too_large };
  Kind kind = need_more;
  // frame: the frame's body is buf[4, 4 + body_size); too_large: the size
  // the peer claimed.
  uint32_t body_size = 0;
  size_t total() const { return kFrameSizeBytes + body_size; }
  BytesView body(BytesView buf) const { return buf.substr(kFrameSizeBytes, body_size); }
};

// Looks at the front of `buf` (received bytes): a whole frame, not enough
// bytes yet, or a frame larger than `max_frame` (0 = no limit) — which the
// caller rejects before buffering it. As RabbitMQ does, the limit applies to
// the size field (the bytes after it), not to the 4 bytes of the field too;
// what strata sends stays within the limit whole.
FrameSplit split_frame(BytesView buf, uint32_t max_frame);

// Key and version at the front of a frame body.
struct FrameHead {
  uint16_t key = 0;
  uint16_t version = 0;
};
Result<FrameHead> peek_head(BytesView frame_body);

}  // namespace strata::proto
