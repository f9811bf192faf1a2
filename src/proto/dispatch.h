// Decoding a frame whose command is not known in advance: the server decodes
// what clients send, a client what servers send. Errors say what is wrong:
// Errc::unsupported_version (unknown key or version) or Errc::corrupt
// (truncated, trailing bytes, bad lengths or counts); the server closes the
// connection with 13 "unknown frame" on either, as RabbitMQ does.
#pragma once

#include <optional>
#include <variant>

#include "proto/commands.h"

namespace strata::proto {

// Everything a client sends.
using ClientFrame =
    std::variant<DeclarePublisherRequest, PublishRequest, QueryPublisherSequenceRequest,
                 DeletePublisherRequest, SubscribeRequest, CreditRequest, StoreOffsetRequest,
                 QueryOffsetRequest, UnsubscribeRequest, CreateStreamRequest, DeleteStreamRequest,
                 MetadataRequest, PeerPropertiesRequest, SaslHandshakeRequest,
                 SaslAuthenticateRequest, TuneFrame, OpenRequest, CloseRequest, CloseResponse,
                 HeartbeatFrame, RouteRequest, PartitionsRequest, ConsumerUpdateResponse,
                 ExchangeCommandVersionsRequest, StreamStatsRequest, CreateSuperStreamRequest,
                 DeleteSuperStreamRequest, ResolveOffsetSpecRequest>;

// Everything a server sends.
using ServerFrame = std::variant<
    DeclarePublisherResponse, PublishConfirm, PublishError, QueryPublisherSequenceResponse,
    DeletePublisherResponse, SubscribeResponse, DeliverFrame, CreditResponse, QueryOffsetResponse,
    UnsubscribeResponse, CreateStreamResponse, DeleteStreamResponse, MetadataResponse,
    MetadataUpdate, PeerPropertiesResponse, SaslHandshakeResponse, SaslAuthenticateResponse,
    TuneFrame, OpenResponse, CloseRequest, CloseResponse, HeartbeatFrame, RouteResponse,
    PartitionsResponse, ConsumerUpdateRequest, ExchangeCommandVersionsResponse, StreamStatsResponse,
    CreateSuperStreamResponse, DeleteSuperStreamResponse, ResolveOffsetSpecResponse>;

Result<ClientFrame> decode_client_frame(BytesView frame_body);
Result<ServerFrame> decode_server_frame(BytesView frame_body);

// The correlation id of a request frame, if its command has one and the
// frame is long enough — so an answer "unknown frame" can name it.
std::optional<uint32_t> peek_correlation_id(BytesView frame_body);

// ExchangeCommandVersions' answer, as RabbitMQ gives it: the commands a
// client may send (requests, not answers or server commands) and the
// versions strata reads of each. Clients look for Publish v2 here before
// they publish filter values.
std::vector<CommandVersion> supported_client_versions();

}  // namespace strata::proto
