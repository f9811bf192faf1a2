#include "etcd/etcd_client.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "etcd/curl_post.h"
#include "etcd/etcd_json.h"
#include "etcd/etcd_limits.h"
#include "net/curl_pool.h"

namespace strata::etcd {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

Status validate(const ClientOptions& o) {
  if (o.endpoints.empty()) {
    return Error(Errc::invalid_argument, "etcd endpoints: empty; name at least one member");
  }
  for (const auto& e : o.endpoints) {
    if (e.rfind("http://", 0) != 0 && e.rfind("https://", 0) != 0) {
      return Error(Errc::invalid_argument,
                   fmt::format("etcd endpoints: \"{}\" is not http://host:port", e));
    }
    if (e.back() == '/') {
      return Error(Errc::invalid_argument,
                   fmt::format("etcd endpoints: \"{}\" must not end with '/'", e));
    }
  }
  if (o.request_timeout.count() <= 0 || o.attempt_timeout.count() <= 0 ||
      o.connect_timeout.count() <= 0) {
    return Error(Errc::invalid_argument, "etcd timeouts must be positive");
  }
  if (o.max_connections < 1) {
    return Error(Errc::invalid_argument, "etcd max_connections must be at least 1");
  }
  return Status::OK();
}

namespace {

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* s = static_cast<std::string*>(user);
  // A reply larger than any etcd answer we ask for is a misbehaving server.
  if (s->size() + size * n > kMaxReplyBytes) return 0;
  s->append(data, size * n);
  return size * n;
}

struct Attempt {
  CURLcode code = CURLE_OK;
  long status = 0;
  std::string body;
  std::string curl_error;
  bool maybe_sent = false;
};

Attempt post(CURL* h, const std::string& url, const std::string& body,
             std::chrono::milliseconds timeout, std::chrono::milliseconds connect_timeout,
             const TlsFiles& tls, const std::string& token) {
  Attempt a;
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_easy_reset(h);
  curl_slist* headers = set_json_post(h, url, body, tls, token);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, long(std::max<int64_t>(1, timeout.count())));
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                   long(std::max<int64_t>(1, std::min(timeout, connect_timeout).count())));
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &a.body);
  a.code = curl_easy_perform(h);
  curl_slist_free_all(headers);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &a.status);
  long sent = 0;
  curl_easy_getinfo(h, CURLINFO_REQUEST_SIZE, &sent);
  a.maybe_sent = sent > 0;
  if (a.code != CURLE_OK) a.curl_error = errbuf[0] ? errbuf : curl_easy_strerror(a.code);
  return a;
}

std::string snippet(const std::string& s) {
  std::string out = printable_key(std::string_view(s).substr(0, kReplySnippetBytes));
  if (s.size() > kReplySnippetBytes) out += "...";
  return out;
}

// What one attempt's answer means for the call: the reply (done), a
// definite refusal from etcd (done, an error), or a failure after which
// another endpoint may do better (`failure` says what went wrong; the
// attempt may have been applied if `maybe_applied`).
struct Verdict {
  std::optional<nlohmann::json> reply;
  std::optional<Error> refusal;
  std::string failure;
  bool maybe_applied = false;
};

Verdict judge(const Attempt& a, const std::string& ep, const std::string& what) {
  Verdict v;
  if (a.code != CURLE_OK) {
    v.maybe_applied = a.maybe_sent;
    v.failure = fmt::format("{}: {}", ep, a.curl_error);
    return v;
  }
  // From here on something answered: unless it is a readable reply or a
  // definite refusal, a write may have been applied.
  v.maybe_applied = true;
  json j = json::parse(a.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    v.failure =
        fmt::format("{}: HTTP {} with unparsable JSON: \"{}\"", ep, a.status, snippet(a.body));
    return v;
  }
  if (a.status != 200) {
    auto ge = decode_gateway_error(j);
    std::string msg =
        ge ? fmt::format("HTTP {}: {} (gRPC code {})", a.status, ge->message, ge->grpc_code)
           : fmt::format("HTTP {}: \"{}\"", a.status, snippet(a.body));
    if (ge && !retry_elsewhere(ge->grpc_code)) {
      v.refusal = Error(errc_for_grpc(ge->grpc_code), fmt::format("{} at {}: {}", what, ep, msg));
    } else {
      v.failure = fmt::format("{}: {}", ep, msg);
    }
    return v;
  }
  if (!j.is_object()) {
    v.failure = fmt::format("{}: the reply is not a JSON object: \"{}\"", ep, snippet(a.body));
    return v;
  }
  v.maybe_applied = false;
  v.reply = std::move(j);
  return v;
}

}  // namespace

Result<std::unique_ptr<EtcdClient>> EtcdClient::open(ClientOptions options) {
  STRATA_TRY(validate(options));
  return std::unique_ptr<EtcdClient>(new EtcdClient(std::move(options)));
}

EtcdClient::EtcdClient(ClientOptions options)
    : options_(std::move(options)),
      pool_(std::make_unique<net::CurlPool>(options_.max_connections)) {}

EtcdClient::~EtcdClient() = default;

std::string EtcdClient::describe() const {
  return fmt::format("etcd:{}", fmt::join(options_.endpoints, ","));
}

namespace {

// Each distinct failure once, with how often it happened: an endpoint that
// is down, tried again every round until the deadline, would otherwise fill
// the message with one cause repeated.
std::string summarize_failures(const std::vector<std::string>& failures) {
  std::vector<std::pair<std::string, int>> seen;
  for (const auto& f : failures) {
    auto it = std::find_if(seen.begin(), seen.end(), [&](const auto& p) { return p.first == f; });
    if (it == seen.end()) {
      seen.emplace_back(f, 1);
    } else {
      it->second += 1;
    }
  }
  std::string out;
  for (const auto& [f, n] : seen) {
    if (!out.empty()) out += "; ";
    out += n > 1 ? fmt::format("{} ({} times)", f, n) : f;
  }
  return out;
}

}  // namespace

Result<std::string> EtcdClient::auth_token(bool renew) {
  if (options_.user.empty()) return std::string();
  std::lock_guard l(token_mu_);
  if (!token_.empty() && !renew) return token_;
  const std::string body = json{{"name", options_.user}, {"password", options_.password}}.dump();
  auto r = call_with_token("authenticate", "", "/v3/auth/authenticate", body, "");
  if (!r.ok()) {
    return std::move(r).error().with_context(
        fmt::format("etcd authentication as user '{}'", options_.user));
  }
  auto t = r->body.find("token");
  if (t == r->body.end() || !t->is_string() || t->get<std::string>().empty()) {
    return Error(Errc::corrupt, fmt::format("etcd authentication as user '{}': no token in the "
                                            "answer of {}",
                                            options_.user, r->endpoint));
  }
  token_ = t->get<std::string>();
  return token_;
}

Result<EtcdClient::Reply> EtcdClient::call(std::string_view op, std::string_view key,
                                           std::string_view path, const std::string& body) {
  STRATA_ASSIGN_OR_RETURN(std::string token, auth_token(false));
  auto r = call_with_token(op, key, path, body, token);
  // Refused outright, or (a streamed reply: lease keepalive) in the body.
  bool expired = !r.ok() && invalid_auth_token(r.error().message);
  if (r.ok() && r->body.contains("error")) {
    auto ge = decode_gateway_error(r->body["error"]);
    expired = ge && invalid_auth_token(ge->message);
  }
  if (options_.user.empty() || !expired) return r;
  // Once: a second refusal of a fresh token is an answer, not an expiry.
  STRATA_ASSIGN_OR_RETURN(token, auth_token(true));
  return call_with_token(op, key, path, body, token);
}

Result<EtcdClient::Reply> EtcdClient::call_with_token(std::string_view op, std::string_view key,
                                                      std::string_view path,
                                                      const std::string& body,
                                                      const std::string& token) {
  const auto deadline = Clock::now() + options_.request_timeout;
  const std::string what = fmt::format("etcd {} of key \"{}\"", op, printable_key(key));
  const size_t n = options_.endpoints.size();
  std::vector<std::string> failures;
  bool maybe_applied = false;
  const size_t start = preferred_.load() % n;
  // Round after round over the endpoints, starting with the one that last
  // answered, until one answers or the deadline passes.
  while (Clock::now() < deadline) {
    for (size_t i = 0; i < n; ++i) {
      const auto now = Clock::now();
      if (now >= deadline) break;
      const size_t idx = (start + i) % n;
      const std::string& ep = options_.endpoints[idx];
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
      auto lease = pool_->acquire(left);
      if (!lease) {
        failures.push_back("no free connection before the deadline");
        return out_of_time(what, failures);
      }
      Attempt a =
          post(lease.get(), ep + std::string(path), body, std::min(left, options_.attempt_timeout),
               options_.connect_timeout, options_.tls, token);
      Verdict v = judge(a, ep, what);
      if (v.refusal) return std::move(*v.refusal);
      maybe_applied = maybe_applied || v.maybe_applied;
      if (v.reply) {
        preferred_.store(idx);
        return Reply{std::move(*v.reply), ep, maybe_applied};
      }
      failures.push_back(std::move(v.failure));
    }
    // Every endpoint failed this round: a short pause before the next one,
    // so a cluster electing a leader is not hammered (bounded by the deadline).
    auto left = deadline - Clock::now();
    if (left <= Clock::duration::zero()) break;
    std::this_thread::sleep_for(std::min<Clock::duration>(left, kPauseBetweenRounds));
  }
  return out_of_time(what, failures);
}

Error EtcdClient::out_of_time(const std::string& what,
                              const std::vector<std::string>& failures) const {
  return Error(Errc::unavailable, fmt::format("{}: no endpoint answered within {} ms ({})", what,
                                              options_.request_timeout.count(),
                                              failures.empty() ? std::string("no attempt")
                                                               : summarize_failures(failures)));
}

namespace {

Error context(Error e, std::string_view op, std::string_view key, const std::string& ep) {
  return std::move(e).with_context(
      fmt::format("etcd {} of key \"{}\" at {}", op, printable_key(key), ep));
}

}  // namespace

Result<RangeResult> EtcdClient::range(std::string_view key, std::string_view range_end,
                                      int64_t limit) {
  STRATA_ASSIGN_OR_RETURN(
      Reply r, call("range", key, "/v3/kv/range", range_json(key, range_end, limit).dump()));
  auto out = decode_range(r.body);
  if (!out.ok()) return context(std::move(out).error(), "range", key, r.endpoint);
  return out;
}

Result<TxnResponse> EtcdClient::txn(const TxnRequest& t) {
  std::string key;
  if (!t.compare.empty()) {
    key = t.compare.front().key;
  } else if (!t.success.empty()) {
    std::visit([&](const auto& op) { key = op.key; }, t.success.front());
  }
  STRATA_ASSIGN_OR_RETURN(Reply r, call("txn", key, "/v3/kv/txn", txn_json(t).dump()));
  auto out = decode_txn(r.body);
  if (!out.ok()) return context(std::move(out).error(), "txn", key, r.endpoint);
  out->maybe_applied = r.maybe_applied;
  return out;
}

Result<int64_t> EtcdClient::put(std::string_view key, std::string_view value, int64_t lease) {
  json j = {{"key", b64(key)}, {"value", b64(value)}};
  if (lease != 0) j["lease"] = std::to_string(lease);
  STRATA_ASSIGN_OR_RETURN(Reply r, call("put", key, "/v3/kv/put", j.dump()));
  auto rev = header_revision(r.body);
  if (!rev.ok()) return context(std::move(rev).error(), "put", key, r.endpoint);
  return rev;
}

Result<int64_t> EtcdClient::remove(std::string_view key, std::string_view range_end) {
  json j = {{"key", b64(key)}};
  if (!range_end.empty()) j["range_end"] = b64(range_end);
  STRATA_ASSIGN_OR_RETURN(Reply r, call("delete", key, "/v3/kv/deleterange", j.dump()));
  auto n = int64_field(r.body, "deleted");
  if (!n.ok()) return context(std::move(n).error(), "delete", key, r.endpoint);
  return n;
}

Status EtcdClient::compact(int64_t revision) {
  json j = {{"revision", std::to_string(revision)}};
  auto r = call("compaction", fmt::format("revision {}", revision), "/v3/kv/compaction", j.dump());
  if (!r.ok()) return std::move(r).error();
  return Status::OK();
}

Result<Lease> EtcdClient::lease_grant(int64_t ttl_seconds) {
  const std::string what = fmt::format("lease ttl {}", ttl_seconds);
  json j = {{"TTL", std::to_string(ttl_seconds)}, {"ID", "0"}};
  STRATA_ASSIGN_OR_RETURN(Reply r, call("lease grant", what, "/v3/lease/grant", j.dump()));
  Lease l;
  auto id = int64_field(r.body, "ID");
  auto ttl = int64_field(r.body, "TTL");
  if (!id.ok()) return context(std::move(id).error(), "lease grant", what, r.endpoint);
  if (!ttl.ok()) return context(std::move(ttl).error(), "lease grant", what, r.endpoint);
  if (*id == 0) {
    auto err = r.body.find("error");
    return Error(
        Errc::transient,
        fmt::format("etcd lease grant at {}: no lease id in the reply{}", r.endpoint,
                    err != r.body.end() && err->is_string() ? ": " + err->get<std::string>()
                                                            : std::string()));
  }
  l.id = *id;
  l.ttl_seconds = *ttl;
  return l;
}

Result<int64_t> EtcdClient::lease_keepalive(int64_t id) {
  const std::string what = fmt::format("lease {:x}", id);
  json j = {{"ID", std::to_string(id)}};
  STRATA_ASSIGN_OR_RETURN(Reply r, call("lease keepalive", what, "/v3/lease/keepalive", j.dump()));
  // A streamed reply: {"result": {...}} (or {"error": ...}).
  auto res = r.body.find("result");
  if (res == r.body.end() || !res->is_object()) {
    auto ge = decode_gateway_error(r.body);
    return Error(ge ? errc_for_grpc(ge->grpc_code) : Errc::corrupt,
                 fmt::format("etcd lease keepalive of {} at {}: {}", what, r.endpoint,
                             ge ? ge->message : "no \"result\" in the reply"));
  }
  auto ttl = int64_field(*res, "TTL");
  if (!ttl.ok()) return context(std::move(ttl).error(), "lease keepalive", what, r.endpoint);
  if (*ttl <= 0) {
    return Error(Errc::not_found, fmt::format("etcd lease keepalive of {} at {}: the lease "
                                              "expired or was revoked",
                                              what, r.endpoint));
  }
  return ttl;
}

Status EtcdClient::lease_revoke(int64_t id) {
  const std::string what = fmt::format("lease {:x}", id);
  json j = {{"ID", std::to_string(id)}};
  auto r = call("lease revoke", what, "/v3/lease/revoke", j.dump());
  if (!r.ok()) return std::move(r).error();
  return Status::OK();
}

Result<LeaseTtl> EtcdClient::lease_time_to_live(int64_t id) {
  const std::string what = fmt::format("lease {:x}", id);
  json j = {{"ID", std::to_string(id)}};
  STRATA_ASSIGN_OR_RETURN(Reply r,
                          call("lease timetolive", what, "/v3/lease/timetolive", j.dump()));
  auto ttl = int64_field(r.body, "TTL");
  auto granted = int64_field(r.body, "grantedTTL");
  if (!ttl.ok()) return context(std::move(ttl).error(), "lease timetolive", what, r.endpoint);
  if (!granted.ok()) {
    return context(std::move(granted).error(), "lease timetolive", what, r.endpoint);
  }
  if (*ttl < 0) {
    return Error(Errc::not_found, fmt::format("etcd lease timetolive of {} at {}: the lease "
                                              "expired or was revoked",
                                              what, r.endpoint));
  }
  return LeaseTtl{*ttl, *granted};
}

}  // namespace strata::etcd
