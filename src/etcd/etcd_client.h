// EtcdClient: a small etcd v3 client (the shell under the etcd catalog and,
// later, cluster ownership): range, txn, put, delete, leases and watch.
//
// Why the JSON gateway (POST /v3/kv/range, /v3/kv/txn, /v3/lease/*,
// /v3/watch) and not gRPC: Debian gives us no gRPC C++ stack we can build
// against, and libcurl is already a dependency (net/, shared with
// objstore); the gateway is part of every etcd server since 3.3 and speaks
// the same protobuf messages as JSON. Its conventions are handled here, once: keys and values are
// base64, int64 fields are JSON strings, fields with default values are
// omitted (a failed txn has no "succeeded"; a PUT event has no "type"),
// and streamed replies (keepalive, watch) are wrapped in {"result": ...}.
//
// Endpoints and deadlines. Every call has a deadline (request_timeout) and
// each attempt on one endpoint its own shorter one (attempt_timeout), so a
// member that is down, refuses connections or is frozen (SIGSTOP: the kernel
// still accepts the connection, nothing answers) costs one attempt, and the
// call moves on to the next endpoint until the deadline. The endpoint that
// last answered is tried first. Answers that say "try another member" (gRPC
// codes unavailable / deadline exceeded, HTTP 5xx without an etcd error,
// unparsable JSON) move on too; etcd's definite refusals (invalid argument,
// lease not found, compacted revision) return at once.
//
// Ambiguity. An attempt that timed out after sending may have been applied.
// A write retried on another endpoint can then fail its compare because of
// its own first attempt; TxnResponse::maybe_applied tells the caller so
// (the etcd catalog resolves it with a per-write nonce, etcd_catalog.h).
//
// Errors name the endpoint, the operation, the key and what was wrong
// (connection, HTTP status, etcd's message, unparsable JSON). Nothing a
// server sends can crash the client. Thread-safe; calls block the caller
// (the node runs them on its blocking pool, common/task.h).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/result.h"
#include "etcd/curl_post.h"

namespace strata::net {
class CurlPool;
}

namespace strata::etcd {

struct ClientOptions {
  std::vector<std::string> endpoints;               // "http://127.0.0.1:2379", ...
  std::chrono::milliseconds request_timeout{5000};  // a whole call, over every endpoint
  std::chrono::milliseconds attempt_timeout{1500};  // one attempt on one endpoint
  std::chrono::milliseconds connect_timeout{500};   // within an attempt
  int max_connections = 16;                         // requests in flight (not watches)
  // A watch silent this long asks its member for a linearizable read (one
  // attempt_timeout); no answer moves the watch to the next endpoint. 0: off.
  std::chrono::milliseconds watch_probe_interval{2000};
  // https endpoints: CA, client certificate and key (curl_post.h).
  TlsFiles tls;
  // etcd's own authentication (`etcdctl auth enable`): the user and its
  // password; "" user: none. The client authenticates at its first call,
  // sends the token with every request and watch, and authenticates again
  // once when a member says the token is invalid (expired, or the member
  // restarted).
  std::string user;
  std::string password;
};

// "endpoints": non-empty, each http://host:port (https is passed to libcurl
// as is). invalid_argument naming the setting otherwise.
Status validate(const ClientOptions& o);

struct KeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t version = 0;
  int64_t lease = 0;
};

struct RangeResult {
  std::vector<KeyValue> kvs;
  int64_t revision = 0;  // the store's revision when the range was served
  bool more = false;     // a limit cut the answer short
};

// The first key after every key that starts with `prefix` ("" -> "\0": all).
std::string prefix_end(std::string_view prefix);

enum class CompareTarget : uint8_t { version, create_revision, mod_revision, value, lease };
enum class CompareOp : uint8_t { equal, greater, less, not_equal };

struct Compare {
  std::string key;
  CompareTarget target = CompareTarget::mod_revision;
  CompareOp op = CompareOp::equal;
  int64_t number = 0;  // version / create_revision / mod_revision / lease
  std::string value;   // value (compared bytewise)

  static Compare revision(std::string key, CompareTarget t, CompareOp op, int64_t n) {
    return Compare{std::move(key), t, op, n, {}};
  }
  static Compare value_is(std::string key, CompareOp op, std::string v) {
    return Compare{std::move(key), CompareTarget::value, op, 0, std::move(v)};
  }
};

struct RangeOp {
  std::string key;
  std::string range_end;  // "" -> the single key
};
struct PutOp {
  std::string key;
  std::string value;
  int64_t lease = 0;
};
struct DeleteOp {
  std::string key;
  std::string range_end;
};
using TxnOp = std::variant<RangeOp, PutOp, DeleteOp>;

struct TxnRequest {
  std::vector<Compare> compare;  // all must hold for `success` to run
  std::vector<TxnOp> success;
  std::vector<TxnOp> failure;
};

struct TxnResponse {
  bool succeeded = false;
  int64_t revision = 0;  // the store's revision after the txn (a write's mod_revision)
  // One per op of the branch that ran; the RangeResult of a RangeOp, empty
  // for puts and deletes.
  std::vector<RangeResult> ranges;
  // An earlier attempt of this call timed out after it was sent and may have
  // been applied (see the header comment).
  bool maybe_applied = false;
};

struct Lease {
  int64_t id = 0;
  int64_t ttl_seconds = 0;
};

struct LeaseTtl {
  int64_t ttl_seconds = 0;  // remaining
  int64_t granted_ttl_seconds = 0;
};

// One batch of watch events (all of one revision or more, in order).
struct WatchEvent {
  enum class Type : uint8_t { put, remove };
  Type type = Type::put;
  KeyValue kv;  // remove: key and mod_revision (the revision of the delete)
};

struct WatchRequest {
  std::string key;
  std::string range_end;       // prefix_end(key) to watch a prefix
  int64_t start_revision = 0;  // 0: from now
};

// A running watch; stops (and joins its thread) when destroyed.
class Watch {
 public:
  virtual ~Watch() = default;
  // The revision the watch resumes from after a reconnect (last seen + 1).
  virtual int64_t next_revision() const = 0;
};

// on_events is called on the watch's own thread, in revision order, never
// twice for one revision. on_error ends the watch: Errc::out_of_range when
// the start revision was compacted (the message names the compact
// revision), Errc::invalid_argument when etcd refuses the request. A lost
// connection is not an error: the watch reconnects (next endpoint) and
// resumes at next_revision(). Nor is a silent member: a member frozen
// (SIGSTOP) or cut off from the quorum keeps the stream open and sends
// nothing, indistinguishable from a quiet key — so after
// watch_probe_interval of silence the watch reads the watched key from the
// same member (linearizable: a member without a leader cannot answer), and
// moves to the next endpoint if that read fails or takes longer than
// attempt_timeout.
using WatchEventsFn = std::function<void(const std::vector<WatchEvent>&)>;
using WatchErrorFn = std::function<void(const Error&)>;

class EtcdClient {
 public:
  static Result<std::unique_ptr<EtcdClient>> open(ClientOptions options);
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  // Linearizable range of one key (range_end "") or [key, range_end).
  // limit 0: no limit.
  Result<RangeResult> range(std::string_view key, std::string_view range_end = {},
                            int64_t limit = 0);
  Result<TxnResponse> txn(const TxnRequest& request);
  // Returns the revision of the write.
  Result<int64_t> put(std::string_view key, std::string_view value, int64_t lease = 0);
  // Returns how many keys were deleted.
  Result<int64_t> remove(std::string_view key, std::string_view range_end = {});
  // Drops the history below `revision` (watches from below it then fail
  // with out_of_range).
  Status compact(int64_t revision);

  Result<Lease> lease_grant(int64_t ttl_seconds);
  // The renewed TTL; Errc::not_found when the lease expired or was revoked.
  Result<int64_t> lease_keepalive(int64_t id);
  // Errc::not_found when the lease does not exist.
  Status lease_revoke(int64_t id);
  // Errc::not_found when the lease expired or was revoked.
  Result<LeaseTtl> lease_time_to_live(int64_t id);

  std::unique_ptr<Watch> watch(WatchRequest request, WatchEventsFn on_events,
                               WatchErrorFn on_error);

  const ClientOptions& options() const { return options_; }
  // "etcd:http://127.0.0.1:2379,http://127.0.0.1:2381".
  std::string describe() const;

  // ---- internal, shared with the watch (etcd_watch.cpp) ----
  struct Reply;
  // POSTs `body` to `path` on the endpoints in turn until one answers or the
  // deadline passes. `op` and `key` name the call in errors.
  Result<Reply> call(std::string_view op, std::string_view key, std::string_view path,
                     const std::string& body);
  size_t preferred_endpoint() const { return preferred_.load(); }
  // The authentication token ("" without a user): the one held, or a new
  // one when `renew` or none is held. Errors name etcd's refusal (a wrong
  // password: invalid_argument).
  Result<std::string> auth_token(bool renew);

 private:
  Result<Reply> call_with_token(std::string_view op, std::string_view key, std::string_view path,
                                const std::string& body, const std::string& token);
  explicit EtcdClient(ClientOptions options);
  // unavailable: no endpoint answered `what` before the deadline, with
  // each distinct failure seen.
  Error out_of_time(const std::string& what, const std::vector<std::string>& failures) const;

  const ClientOptions options_;
  std::unique_ptr<net::CurlPool> pool_;
  std::atomic<size_t> preferred_{0};
  std::mutex token_mu_;  // token_; held while authenticating
  std::string token_;
};

}  // namespace strata::etcd
