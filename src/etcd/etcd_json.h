// The etcd v3 JSON gateway's encoding, as pure functions: requests to JSON
// and replies from JSON (base64 keys and values, int64 as strings, omitted
// defaults). Every decoder checks types and returns Errc::corrupt naming
// the field instead of trusting the server.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "etcd/etcd_client.h"

namespace strata::etcd {

struct EtcdClient::Reply {
  nlohmann::json body;
  std::string endpoint;        // which endpoint answered
  bool maybe_applied = false;  // an earlier attempt timed out after sending
};

std::string b64(std::string_view bytes);
std::optional<std::string> unb64(std::string_view text);

// A key for error messages: printable ASCII as is, other bytes as \xNN.
std::string printable_key(std::string_view key);

nlohmann::json range_json(std::string_view key, std::string_view range_end, int64_t limit);
nlohmann::json txn_json(const TxnRequest& t);
nlohmann::json watch_create_json(const WatchRequest& w);

// Optional int64 field sent as a string (or a number); absent -> 0.
Result<int64_t> int64_field(const nlohmann::json& obj, std::string_view name);
Result<KeyValue> decode_kv(const nlohmann::json& kv);
Result<RangeResult> decode_range(const nlohmann::json& body);
Result<TxnResponse> decode_txn(const nlohmann::json& body);
// header.revision (absent -> 0).
Result<int64_t> header_revision(const nlohmann::json& body);
Result<std::vector<WatchEvent>> decode_events(const nlohmann::json& result);

// What an error reply from the gateway means: its gRPC code (-1 if none)
// and message ({"error": ..., "code": N, "message": ...}).
struct GatewayError {
  int grpc_code = -1;
  std::string message;
};
std::optional<GatewayError> decode_gateway_error(const nlohmann::json& body);
// gRPC codes after which another member may succeed: unavailable (14),
// deadline exceeded (4), unknown (2, e.g. "leader changed"), aborted (10).
bool retry_elsewhere(int grpc_code);
// not_found (5), invalid_argument (3), out_of_range (11, compacted),
// failed_precondition (9), otherwise transient.
Errc errc_for_grpc(int grpc_code);
// Whether etcd's message says the request's auth token is no longer valid
// (expired, or unknown to a restarted member): authenticate again, once.
bool invalid_auth_token(std::string_view message);

}  // namespace strata::etcd
