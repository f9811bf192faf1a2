#include "proto/frame.h"

#include <fmt/format.h>

#include "common/endian.h"

namespace strata::proto {

namespace {
std::string_view base_name(uint16_t key) {
  switch (key) {
    case kDeclarePublisher:
      return "DeclarePublisher";
    case kPublish:
      return "Publish";
    case kPublishConfirm:
      return "PublishConfirm";
    case kPublishError:
      return "PublishError";
    case kQueryPublisherSequence:
      return "QueryPublisherSequence";
    case kDeletePublisher:
      return "DeletePublisher";
    case kSubscribe:
      return "Subscribe";
    case kDeliver:
      return "Deliver";
    case kCredit:
      return "Credit";
    case kStoreOffset:
      return "StoreOffset";
    case kQueryOffset:
      return "QueryOffset";
    case kUnsubscribe:
      return "Unsubscribe";
    case kCreate:
      return "Create";
    case kDelete:
      return "Delete";
    case kMetadata:
      return "Metadata";
    case kMetadataUpdate:
      return "MetadataUpdate";
    case kPeerProperties:
      return "PeerProperties";
    case kSaslHandshake:
      return "SaslHandshake";
    case kSaslAuthenticate:
      return "SaslAuthenticate";
    case kTune:
      return "Tune";
    case kOpen:
      return "Open";
    case kClose:
      return "Close";
    case kHeartbeat:
      return "Heartbeat";
    case kRoute:
      return "Route";
    case kPartitions:
      return "Partitions";
    case kConsumerUpdate:
      return "ConsumerUpdate";
    case kExchangeCommandVersions:
      return "ExchangeCommandVersions";
    case kStreamStats:
      return "StreamStats";
    case kCreateSuperStream:
      return "CreateSuperStream";
    case kDeleteSuperStream:
      return "DeleteSuperStream";
    case kResolveOffsetSpec:
      return "ResolveOffsetSpec";
    default:
      return {};
  }
}
}  // namespace

std::string command_name(uint16_t key) {
  std::string_view base = base_name(uint16_t(key & ~kResponseFlag));
  if (base.empty()) return fmt::format("unknown command 0x{:04x}", key);
  return (key & kResponseFlag) ? std::string(base) + "Response" : std::string(base);
}

std::string_view response_code_name(ResponseCode c) {
  switch (c) {
    case ResponseCode::ok:
      return "ok";
    case ResponseCode::stream_does_not_exist:
      return "stream does not exist";
    case ResponseCode::subscription_id_already_exists:
      return "subscription id already exists";
    case ResponseCode::subscription_id_does_not_exist:
      return "subscription id does not exist";
    case ResponseCode::stream_already_exists:
      return "stream already exists";
    case ResponseCode::stream_not_available:
      return "stream not available";
    case ResponseCode::sasl_mechanism_not_supported:
      return "SASL mechanism not supported";
    case ResponseCode::authentication_failure:
      return "authentication failure";
    case ResponseCode::sasl_error:
      return "SASL error";
    case ResponseCode::sasl_challenge:
      return "SASL challenge";
    case ResponseCode::sasl_authentication_failure_loopback:
      return "SASL authentication failure (loopback only)";
    case ResponseCode::virtual_host_access_failure:
      return "virtual host access failure";
    case ResponseCode::unknown_frame:
      return "unknown frame";
    case ResponseCode::frame_too_large:
      return "frame too large";
    case ResponseCode::internal_error:
      return "internal error";
    case ResponseCode::access_refused:
      return "access refused";
    case ResponseCode::precondition_failed:
      return "precondition failed";
    case ResponseCode::publisher_does_not_exist:
      return "publisher does not exist";
    case ResponseCode::no_offset:
      return "no offset";
    case ResponseCode::sasl_cannot_change_mechanism:
      return "SASL cannot change mechanism";
    case ResponseCode::sasl_cannot_change_username:
      return "SASL cannot change username";
  }
  return "unknown response code";
}

FrameSplit split_frame(BytesView buf, uint32_t max_frame) {
  FrameSplit s;
  if (buf.size() < kFrameSizeBytes) return s;
  s.body_size = get_be32(strata::u8(buf.data()));
  if (max_frame != 0 && s.body_size > max_frame) {
    s.kind = FrameSplit::too_large;
    return s;
  }
  s.kind = buf.size() - kFrameSizeBytes >= s.body_size ? FrameSplit::frame : FrameSplit::need_more;
  return s;
}

Result<FrameHead> peek_head(BytesView frame_body) {
  if (frame_body.size() < kFrameHeadBytes) {
    return make_error(Errc::corrupt, fmt::format("frame of {} bytes: too short for key and version",
                                                 frame_body.size()));
  }
  const uint8_t* p = strata::u8(frame_body.data());
  return FrameHead{get_be16(p), get_be16(p + 2)};
}

}  // namespace strata::proto
