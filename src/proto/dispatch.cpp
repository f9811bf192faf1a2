#include "proto/dispatch.h"

#include "common/endian.h"

namespace strata::proto {

namespace {

template <typename Variant, typename T>
Result<Variant> as(uint16_t version, BytesView rest) {
  auto r = detail::decode_fields<T>(version, rest);
  if (!r.ok()) return std::move(r).error();
  return Variant(std::move(r).value());
}

template <typename Variant>
Result<Variant> unknown(uint16_t key) {
  return make_error(Errc::unsupported_version, "unknown frame: " + command_name(key));
}

}  // namespace

Result<ClientFrame> decode_client_frame(BytesView frame_body) {
  auto head = peek_head(frame_body);
  if (!head.ok()) return std::move(head).error();
  uint16_t v = head->version;
  BytesView rest = frame_body.substr(kFrameHeadBytes);
  using F = ClientFrame;
  switch (head->key) {
    case DeclarePublisherRequest::kKey:
      return as<F, DeclarePublisherRequest>(v, rest);
    case PublishRequest::kKey:
      return as<F, PublishRequest>(v, rest);
    case QueryPublisherSequenceRequest::kKey:
      return as<F, QueryPublisherSequenceRequest>(v, rest);
    case DeletePublisherRequest::kKey:
      return as<F, DeletePublisherRequest>(v, rest);
    case SubscribeRequest::kKey:
      return as<F, SubscribeRequest>(v, rest);
    case CreditRequest::kKey:
      return as<F, CreditRequest>(v, rest);
    case StoreOffsetRequest::kKey:
      return as<F, StoreOffsetRequest>(v, rest);
    case QueryOffsetRequest::kKey:
      return as<F, QueryOffsetRequest>(v, rest);
    case UnsubscribeRequest::kKey:
      return as<F, UnsubscribeRequest>(v, rest);
    case CreateStreamRequest::kKey:
      return as<F, CreateStreamRequest>(v, rest);
    case DeleteStreamRequest::kKey:
      return as<F, DeleteStreamRequest>(v, rest);
    case MetadataRequest::kKey:
      return as<F, MetadataRequest>(v, rest);
    case PeerPropertiesRequest::kKey:
      return as<F, PeerPropertiesRequest>(v, rest);
    case SaslHandshakeRequest::kKey:
      return as<F, SaslHandshakeRequest>(v, rest);
    case SaslAuthenticateRequest::kKey:
      return as<F, SaslAuthenticateRequest>(v, rest);
    // The client's answer to the server's Tune is the same frame with or
    // without the response bit: the Java and Go clients set it, the .NET
    // and JS clients do not, and RabbitMQ takes both.
    case TuneFrame::kKey:
    case TuneFrame::kKey | kResponseFlag:
      return as<F, TuneFrame>(v, rest);
    case OpenRequest::kKey:
      return as<F, OpenRequest>(v, rest);
    case CloseRequest::kKey:
      return as<F, CloseRequest>(v, rest);
    case CloseResponse::kKey:
      return as<F, CloseResponse>(v, rest);
    case HeartbeatFrame::kKey:
      return as<F, HeartbeatFrame>(v, rest);
    case RouteRequest::kKey:
      return as<F, RouteRequest>(v, rest);
    case PartitionsRequest::kKey:
      return as<F, PartitionsRequest>(v, rest);
    case ConsumerUpdateResponse::kKey:
      return as<F, ConsumerUpdateResponse>(v, rest);
    case ExchangeCommandVersionsRequest::kKey:
      return as<F, ExchangeCommandVersionsRequest>(v, rest);
    case StreamStatsRequest::kKey:
      return as<F, StreamStatsRequest>(v, rest);
    case CreateSuperStreamRequest::kKey:
      return as<F, CreateSuperStreamRequest>(v, rest);
    case DeleteSuperStreamRequest::kKey:
      return as<F, DeleteSuperStreamRequest>(v, rest);
    case ResolveOffsetSpecRequest::kKey:
      return as<F, ResolveOffsetSpecRequest>(v, rest);
    default:
      return unknown<F>(head->key);
  }
}

Result<ServerFrame> decode_server_frame(BytesView frame_body) {
  auto head = peek_head(frame_body);
  if (!head.ok()) return std::move(head).error();
  uint16_t v = head->version;
  BytesView rest = frame_body.substr(kFrameHeadBytes);
  using F = ServerFrame;
  switch (head->key) {
    case DeclarePublisherResponse::kKey:
      return as<F, DeclarePublisherResponse>(v, rest);
    case PublishConfirm::kKey:
      return as<F, PublishConfirm>(v, rest);
    case PublishError::kKey:
      return as<F, PublishError>(v, rest);
    case QueryPublisherSequenceResponse::kKey:
      return as<F, QueryPublisherSequenceResponse>(v, rest);
    case DeletePublisherResponse::kKey:
      return as<F, DeletePublisherResponse>(v, rest);
    case SubscribeResponse::kKey:
      return as<F, SubscribeResponse>(v, rest);
    case DeliverFrame::kKey:
      return as<F, DeliverFrame>(v, rest);
    case CreditResponse::kKey:
      return as<F, CreditResponse>(v, rest);
    case QueryOffsetResponse::kKey:
      return as<F, QueryOffsetResponse>(v, rest);
    case UnsubscribeResponse::kKey:
      return as<F, UnsubscribeResponse>(v, rest);
    case CreateStreamResponse::kKey:
      return as<F, CreateStreamResponse>(v, rest);
    case DeleteStreamResponse::kKey:
      return as<F, DeleteStreamResponse>(v, rest);
    case MetadataResponse::kKey:
      return as<F, MetadataResponse>(v, rest);
    case MetadataUpdate::kKey:
      return as<F, MetadataUpdate>(v, rest);
    case PeerPropertiesResponse::kKey:
      return as<F, PeerPropertiesResponse>(v, rest);
    case SaslHandshakeResponse::kKey:
      return as<F, SaslHandshakeResponse>(v, rest);
    case SaslAuthenticateResponse::kKey:
      return as<F, SaslAuthenticateResponse>(v, rest);
    case TuneFrame::kKey:
      return as<F, TuneFrame>(v, rest);
    case OpenResponse::kKey:
      return as<F, OpenResponse>(v, rest);
    case CloseRequest::kKey:
      return as<F, CloseRequest>(v, rest);
    case CloseResponse::kKey:
      return as<F, CloseResponse>(v, rest);
    case HeartbeatFrame::kKey:
      return as<F, HeartbeatFrame>(v, rest);
    case RouteResponse::kKey:
      return as<F, RouteResponse>(v, rest);
    case PartitionsResponse::kKey:
      return as<F, PartitionsResponse>(v, rest);
    case ConsumerUpdateRequest::kKey:
      return as<F, ConsumerUpdateRequest>(v, rest);
    case ExchangeCommandVersionsResponse::kKey:
      return as<F, ExchangeCommandVersionsResponse>(v, rest);
    case StreamStatsResponse::kKey:
      return as<F, StreamStatsResponse>(v, rest);
    case CreateSuperStreamResponse::kKey:
      return as<F, CreateSuperStreamResponse>(v, rest);
    case DeleteSuperStreamResponse::kKey:
      return as<F, DeleteSuperStreamResponse>(v, rest);
    case ResolveOffsetSpecResponse::kKey:
      return as<F, ResolveOffsetSpecResponse>(v, rest);
    default:
      return unknown<F>(head->key);
  }
}

std::optional<uint32_t> peek_correlation_id(BytesView frame_body) {
  auto head = peek_head(frame_body);
  if (!head.ok() || frame_body.size() < kFrameHeadBytes + 4) return std::nullopt;
  switch (head->key) {
    // Commands without a correlation id.
    case kPublish:
    case kPublishConfirm:
    case kPublishError:
    case kDeliver:
    case kCredit:
    case kStoreOffset:
    case kMetadataUpdate:
    case kTune:
    case kTune | kResponseFlag:
    case kHeartbeat:
    case kCredit | kResponseFlag:
      return std::nullopt;
    default:
      break;
  }
  // Unknown keys included: requests carry the correlation id right after
  // the version, so an "unknown frame" answer can still be correlated.
  return get_be32(strata::u8(frame_body.data() + kFrameHeadBytes));
}

std::vector<CommandVersion> supported_client_versions() {
  // RabbitMQ's order (rabbit_stream_utils:command_versions/0, 4.x).
  return {{kDeclarePublisher, 1, 1},
          {kPublish, 1, 2},
          {kQueryPublisherSequence, 1, 1},
          {kDeletePublisher, 1, 1},
          {kSubscribe, 1, 1},
          {kCredit, 1, 1},
          {kStoreOffset, 1, 1},
          {kQueryOffset, 1, 1},
          {kUnsubscribe, 1, 1},
          {kCreate, 1, 1},
          {kDelete, 1, 1},
          {kMetadata, 1, 1},
          {kClose, 1, 1},
          {kHeartbeat, 1, 1},
          {kRoute, 1, 1},
          {kPartitions, 1, 1},
          {kStreamStats, 1, 1},
          {kCreateSuperStream, 1, 1},
          {kDeleteSuperStream, 1, 1},
          {kResolveOffsetSpec, 1, 1}};
}

}  // namespace strata::proto
