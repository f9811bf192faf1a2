#include "objstore/s3_store.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <charconv>
#include <cstring>
#include <unordered_map>

#include "common/crc32c.h"
#include "objstore/digest.h"
#include "objstore/key.h"
#include "objstore/retry_class.h"
#include "objstore/s3_range.h"
#include "objstore/s3_xml.h"
#include "objstore/uri.h"

namespace strata::objstore {

namespace {

ObjectError make_error(Op op, std::string_view key, RetryClass rc, std::string msg, int status = 0,
                       std::string code = "") {
  ObjectError e;
  e.op = op;
  e.key = std::string(key);
  e.retry = rc;
  e.message = std::move(msg);
  e.http_status = status;
  e.s3_code = std::move(code);
  return e;
}

// A printable excerpt of a non-XML error body.
std::string excerpt(std::string_view body) {
  std::string out;
  for (char c : body.substr(0, 200)) out.push_back((c >= 0x20 && c < 0x7f) ? c : '.');
  if (body.size() > 200) out += "...";
  return out;
}

ObjectError error_from_response(Op op, std::string_view key, const HttpResponse& r) {
  if (r.failure != TransportFailure::none) {
    std::string msg = std::string(transport_failure_name(r.failure)) + ": " + r.transport_message;
    return make_error(op, key, classify_transport(r.failure), std::move(msg), r.status);
  }
  std::string code, message;
  if (auto e = s3xml::parse_error(r.body)) {
    code = e->code;
    message = e->message.empty() ? "(no message)" : e->message;
  } else if (r.body.empty()) {
    message = "empty body";
  } else {
    message = "non-S3 error body: " + excerpt(r.body);
  }
  // Classify before `code` is moved into the error (argument evaluation
  // order is unspecified).
  const RetryClass rc = classify_http(op, r.status, code);
  return make_error(op, key, rc, std::move(message), r.status, std::move(code));
}

// A complete HTTP answer that does not mean what it should (short body,
// mismatched Content-Range, malformed XML): the server or something on the
// path garbled it; a retry may get a good answer.
ObjectError bad_response(Op op, std::string_view key, int status, std::string msg) {
  return make_error(op, key, RetryClass::transient, "malformed response: " + msg, status);
}

bool parse_u64(std::string_view s, uint64_t* v) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size();
}

std::optional<uint32_t> parse_crc_hex(const std::string* s) {
  if (!s || s->size() != 8) return std::nullopt;
  uint32_t v = 0;
  auto [p, ec] = std::from_chars(s->data(), s->data() + s->size(), v, 16);
  if (ec != std::errc() || p != s->data() + s->size()) return std::nullopt;
  return v;
}

std::string strip_quotes(const std::string* s) {
  if (!s) return "";
  if (s->size() >= 2 && s->front() == '"' && s->back() == '"') return s->substr(1, s->size() - 2);
  return *s;
}

ObjectError invalid_key(Op op, std::string_view key, const std::string& problem) {
  return make_error(op, key, RetryClass::fatal, "invalid key: " + problem);
}

}  // namespace

std::string S3Config::effective_endpoint() const {
  std::string e = endpoint.empty() ? fmt::format("https://s3.{}.amazonaws.com", region) : endpoint;
  while (!e.empty() && e.back() == '/') e.pop_back();
  return e;
}

Result<std::unique_ptr<S3ObjectStore>> S3ObjectStore::open(const S3Config& c,
                                                           uint64_t max_get_bytes) {
  std::string ep = c.effective_endpoint();
  auto scheme_end = ep.find("://");
  if (scheme_end == std::string::npos ||
      (ep.compare(0, scheme_end, "http") != 0 && ep.compare(0, scheme_end, "https") != 0)) {
    return Error(Errc::invalid_argument,
                 fmt::format("s3 endpoint '{}': expected http://host[:port] or https://...", ep));
  }
  std::string hostport = ep.substr(scheme_end + 3);
  if (hostport.empty() || hostport.find('/') != std::string::npos) {
    return Error(Errc::invalid_argument,
                 fmt::format("s3 endpoint '{}': expected scheme://host[:port] without a path", ep));
  }
  if (c.bucket.empty()) return Error(Errc::invalid_argument, "s3 bucket is not set");
  if (c.region.empty()) return Error(Errc::invalid_argument, "s3 region is not set");
  if (c.access_key_id.empty() || c.secret_access_key.empty()) {
    return Error(Errc::invalid_argument,
                 "s3 credentials are not set (access_key_id / secret_access_key in the config, "
                 "or AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)");
  }
  if (c.max_connections < 1) return Error(Errc::invalid_argument, "s3 max_connections < 1");
  if (max_get_bytes < 1) return Error(Errc::invalid_argument, "objstore max_get_bytes < 1");
  std::string base = c.addressing == Addressing::virtual_hosted
                         ? ep.substr(0, scheme_end + 3) + c.bucket + "." + hostport
                         : ep;
  return std::unique_ptr<S3ObjectStore>(new S3ObjectStore(c, std::move(base), max_get_bytes));
}

S3ObjectStore::S3ObjectStore(const S3Config& c, std::string base_url, uint64_t max_get_bytes)
    : config_(c),
      settings_{c.region,           c.access_key_id,      c.secret_access_key,
                c.session_token,    c.connect_timeout_ms, c.request_timeout_ms,
                c.stall_timeout_ms, c.tls_verify,         c.ca_file},
      base_url_(std::move(base_url)),
      bucket_path_(c.addressing == Addressing::path ? "/" + uri_encode(c.bucket, false) : ""),
      max_get_bytes_(max_get_bytes),
      pool_(c.max_connections) {}

std::string S3ObjectStore::describe() const {
  return fmt::format("s3://{} at {} ({}, region {})", config_.bucket, config_.effective_endpoint(),
                     config_.addressing == Addressing::path ? "path-style" : "virtual-hosted",
                     config_.region);
}

std::string S3ObjectStore::url_for(std::string_view key, const std::string& query) const {
  std::string url = base_url_ + bucket_path_;
  if (!key.empty()) {
    url += "/" + uri_encode(key, true);
  } else if (bucket_path_.empty()) {
    url += "/";
  }
  if (!query.empty()) url += "?" + query;
  return url;
}

ObjectResult<HttpResponse> S3ObjectStore::exchange(Op op, std::string_view key,
                                                   const HttpRequest& req) {
  auto lease = pool_.acquire(std::chrono::milliseconds(config_.request_timeout_ms));
  if (!lease) {
    return make_error(op, key, RetryClass::transient,
                      fmt::format("all {} connections stayed busy for {} ms", pool_.max_handles(),
                                  config_.request_timeout_ms));
  }
  return perform(lease.get(), settings_, req);
}

ObjectResult<HttpResponse> S3ObjectStore::run(Op op, std::string_view key, const HttpRequest& req,
                                              std::initializer_list<int> ok_statuses) {
  auto r = exchange(op, key, req);
  if (!r.ok()) return r;
  if (r->failure != TransportFailure::none) return error_from_response(op, key, *r);
  for (int s : ok_statuses)
    if (r->status == s) return r;
  return error_from_response(op, key, *r);
}

ObjectResult<PutResult> S3ObjectStore::put(std::string_view key, BodyParts body,
                                           const PutOptions& opts) {
  if (auto p = key_problem(key)) return invalid_key(Op::put, key, *p);
  // The CRC goes in a header, so it is computed before the body is sent;
  // a caller's CRC is checked here rather than while streaming because
  // some S3-compatible servers (s3rver) keep a cut-short upload as an
  // object — nothing that does not match may reach the server.
  uint32_t crc = 0;
  (void)for_each_body_piece(
      body,
      [&crc](BytesView piece) {
        crc = crc32c::extend(crc, piece.data(), piece.size());
        return Status::OK();
      },
      opts.on_progress);
  if (opts.crc32c && *opts.crc32c != crc) {
    return make_error(Op::put, key, RetryClass::fatal,
                      fmt::format("checksum mismatch: body CRC32C {:08x}, caller said {:08x}; "
                                  "nothing sent",
                                  crc, *opts.crc32c));
  }
  HttpRequest req;
  req.method = "PUT";
  req.url = url_for(key);
  req.body = body;
  req.on_body_progress = opts.on_progress;
  req.headers = {"Content-Type: " + opts.content_type, "x-amz-content-sha256: UNSIGNED-PAYLOAD",
                 "x-amz-checksum-crc32c: " + crc32c_base64(crc),
                 fmt::format("x-amz-meta-crc32c: {:08x}", crc)};
  auto r = run(Op::put, key, req, {200});
  if (!r.ok()) return std::move(r).error();
  return PutResult{strip_quotes(r->header("etag")), crc};
}

ObjectResult<uint64_t> S3ObjectStore::get_to(std::string_view key, const GetSink& sink,
                                             const GetLimits& limits) {
  if (auto p = key_problem(key)) return invalid_key(Op::get, key, *p);
  // What the callbacks learn while the answer streams in. The first error
  // ends the transfer at once and is what get_to reports.
  struct State {
    std::optional<ObjectError> error;
    std::optional<uint64_t> length;    // Content-Length
    std::optional<uint32_t> want_crc;  // x-amz-meta-crc32c
    uint32_t crc = 0;                  // of the bytes so far
    uint64_t received = 0;
  } st;
  HttpRequest req;
  req.method = "GET";
  req.url = url_for(key);
  req.headers = {std::string("x-amz-content-sha256: ") + std::string(kEmptySha256)};
  req.on_headers = [&](const HttpResponse& r) {
    if (r.status != 200) {
      st.error = bad_response(Op::get, key, r.status,
                              fmt::format("HTTP {} to a GET without Range", r.status));
      return false;
    }
    if (const std::string* cl = r.header("content-length")) {
      uint64_t n;
      if (!parse_u64(*cl, &n)) {
        st.error = bad_response(Op::get, key, r.status, "Content-Length '" + *cl + "'");
        return false;
      }
      // Refused before its body is read: the announced size is the size.
      if (n > limits.max_bytes) {
        st.error = over_cap_error(Op::get, key, limits.max_bytes, n);
        st.error->http_status = r.status;
        return false;
      }
      st.length = n;
    }
    st.want_crc = parse_crc_hex(r.header("x-amz-meta-crc32c"));
    if (sink.on_size && st.length) {
      if (Status s = sink.on_size(*st.length); !s.ok()) {
        st.error = sink_error(Op::get, key, 0, s.error());
        return false;
      }
    }
    return true;
  };
  req.on_data = [&](const char* data, size_t n) {
    // The cap holds also when no Content-Length was sent (chunked) or the
    // server sends more than it announced.
    if (n > limits.max_bytes - st.received) {
      st.error = over_cap_error(Op::get, key, limits.max_bytes, std::nullopt);
      return false;
    }
    // The CRC runs while the bytes are cache-hot, overlapped with the wait
    // for the next ones.
    if (st.want_crc) st.crc = crc32c::extend(st.crc, data, n);
    if (Status s = sink.on_piece(BytesView(data, n)); !s.ok()) {
      st.error = sink_error(Op::get, key, st.received, s.error());
      return false;
    }
    st.received += n;
    return true;
  };
  auto r = exchange(Op::get, key, req);
  if (!r.ok()) return std::move(r).error();
  if (st.error) return *st.error;
  if (r->failure != TransportFailure::none || r->status != 200) {
    return error_from_response(Op::get, key, *r);
  }
  if (st.length && *st.length != st.received) {
    return bad_response(
        Op::get, key, r->status,
        fmt::format("body has {} bytes, Content-Length said {}", st.received, *st.length));
  }
  if (st.want_crc && st.crc != *st.want_crc) {
    return make_error(Op::get, key, RetryClass::fatal,
                      fmt::format("checksum mismatch: body of {} bytes has CRC32C {:08x}, the "
                                  "object's x-amz-meta-crc32c says {:08x}",
                                  st.received, st.crc, *st.want_crc),
                      r->status);
  }
  return st.received;
}

ObjectResult<uint64_t> S3ObjectStore::read_range(std::string_view key, uint64_t offset,
                                                 std::span<uint8_t> dst) {
  if (auto p = key_problem(key)) return invalid_key(Op::get_range, key, *p);
  if (dst.empty()) {
    return make_error(Op::get_range, key, RetryClass::fatal, "ranged get into an empty buffer");
  }
  // Clamp so offset + window cannot overflow.
  const uint64_t window = std::min<uint64_t>(dst.size(), UINT64_MAX - offset);
  struct State {
    std::optional<ObjectError> error;
    std::optional<RangePlan> plan;
    uint64_t written = 0;
    bool cut = false;  // the plan's bytes are in; the rest was not read
  } st;
  HttpRequest req;
  req.method = "GET";
  req.url = url_for(key);
  req.headers = {std::string("x-amz-content-sha256: ") + std::string(kEmptySha256),
                 fmt::format("Range: bytes={}-{}", offset, offset + window - 1)};
  req.on_headers = [&](const HttpResponse& r) {
    auto j = judge_range_answer(r.status, r.header("content-range"), r.header("content-length"),
                                offset, window);
    if (auto* no = std::get_if<RangeRefusal>(&j)) {
      st.error = make_error(Op::get_range, key, no->retry, std::move(no->message), r.status);
      return false;
    }
    st.plan = std::get<RangePlan>(j);
    return true;
  };
  req.on_data = [&](const char* data, size_t n) {
    // libcurl ends a 2xx answer's headers (and so judges them) before its
    // body; a body without that judgement is never written anywhere.
    if (!st.plan) {
      st.error = bad_response(Op::get_range, key, 0, "a body arrived before its headers ended");
      return false;
    }
    const uint64_t room = st.plan->expected - st.written;
    const size_t take = size_t(std::min<uint64_t>(n, room));
    std::memcpy(dst.data() + st.written, data, take);
    st.written += take;
    if (take == n && !(st.plan->cut_after && st.written == st.plan->expected)) return true;
    if (st.plan->cut_after) {
      st.cut = true;
      return false;
    }
    // More than the headers announced (possible without a Content-Length).
    st.error = make_error(Op::get_range, key, RetryClass::fatal,
                          fmt::format("the server sent more than the {} bytes it announced for "
                                      "bytes={}-{}; transfer aborted",
                                      st.plan->expected, offset, offset + window - 1),
                          206);
    return false;
  };
  auto r = exchange(Op::get_range, key, req);
  if (!r.ok()) return std::move(r).error();
  if (st.error) return *st.error;
  if (st.cut) return st.written;
  if (r->failure != TransportFailure::none || (r->status != 200 && r->status != 206)) {
    return error_from_response(Op::get_range, key, *r);
  }
  if (!st.plan || st.written != st.plan->expected) {
    return bad_response(
        Op::get_range, key, r->status,
        fmt::format("body has {} of the {} bytes announced for bytes={}-{}", st.written,
                    st.plan ? st.plan->expected : 0, offset, offset + window - 1));
  }
  return st.written;
}

ObjectResult<ObjectInfo> S3ObjectStore::head(std::string_view key) {
  if (auto p = key_problem(key)) return invalid_key(Op::head, key, *p);
  HttpRequest req;
  req.method = "HEAD";
  req.url = url_for(key);
  req.headers = {std::string("x-amz-content-sha256: ") + std::string(kEmptySha256)};
  auto r = run(Op::head, key, req, {200});
  if (!r.ok()) return std::move(r).error();
  ObjectInfo info;
  info.key = std::string(key);
  const std::string* cl = r->header("content-length");
  if (!cl || !parse_u64(*cl, &info.size)) {
    return bad_response(
        Op::head, key, 200,
        "HEAD without a valid Content-Length (" + (cl ? *cl : std::string("none")) + ")");
  }
  info.etag = strip_quotes(r->header("etag"));
  info.crc32c = parse_crc_hex(r->header("x-amz-meta-crc32c"));
  if (const std::string* lm = r->header("last-modified")) {
    // An HTTP date ("Wed, 12 Oct 2009 17:50:30 GMT"): whole seconds.
    time_t t = curl_getdate(lm->c_str(), nullptr);
    if (t == time_t(-1)) {
      return bad_response(Op::head, key, 200,
                          "HEAD with an unparsable Last-Modified (" + *lm + ")");
    }
    info.last_modified_ms = int64_t(t) * 1000;
  }
  return info;
}

ObjectStatus S3ObjectStore::remove(std::string_view key) {
  if (auto p = key_problem(key)) return invalid_key(Op::remove, key, *p);
  HttpRequest req;
  req.method = "DELETE";
  req.url = url_for(key);
  req.headers = {std::string("x-amz-content-sha256: ") + std::string(kEmptySha256)};
  auto r = run(Op::remove, key, req, {200, 204});
  // Deleting a missing key is success (S3 itself answers 204).
  if (!r.ok() && r.retry() != RetryClass::not_found) return std::move(r).error();
  return {};
}

ObjectResult<std::vector<RemoveOutcome>> S3ObjectStore::remove_batch(
    std::span<const std::string> keys) {
  const std::string what = fmt::format("batch of {} keys from '{}'", keys.size(), keys.front());
  std::string body = s3xml::build_delete_request(keys);
  HttpRequest req;
  req.method = "POST";
  req.url = url_for("", canonical_query({{"delete", ""}}));
  BytesView bv(body);
  req.body = BodyParts(&bv, 1);
  req.headers = {"Content-Type: application/xml", "Content-MD5: " + md5_base64(body),
                 "x-amz-content-sha256: " + sha256_hex(body)};
  auto r = run(Op::remove_many, what, req, {200});
  if (!r.ok()) return std::move(r).error();
  auto parsed = s3xml::parse_delete_result(r->body);
  if (!parsed.ok()) return bad_response(Op::remove_many, what, 200, parsed.error().message);

  std::unordered_map<std::string_view, const s3xml::DeleteResult::KeyError*> errors;
  for (const auto& e : parsed->errors) errors[e.key] = &e;
  std::unordered_map<std::string_view, bool> deleted;
  for (const auto& k : parsed->deleted) deleted[k] = true;

  std::vector<RemoveOutcome> out;
  out.reserve(keys.size());
  for (const auto& k : keys) {
    RemoveOutcome o{k, std::nullopt};
    if (auto it = errors.find(k); it != errors.end()) {
      const auto& e = *it->second;
      if (e.code != "NoSuchKey") {  // a missing key counts as removed
        o.error = make_error(Op::remove_many, k, classify_http(Op::remove_many, 200, e.code),
                             e.message.empty() ? "(no message)" : e.message, 200, e.code);
      }
    } else if (!deleted.count(k)) {
      o.error = make_error(Op::remove_many, k, RetryClass::transient,
                           "the DeleteObjects answer neither confirms nor rejects this key", 200);
    }
    out.push_back(std::move(o));
  }
  return out;
}

std::vector<RemoveOutcome> S3ObjectStore::remove_many(std::span<const std::string> keys) {
  std::vector<RemoveOutcome> out(keys.size());
  std::vector<std::string> batch;
  std::vector<size_t> batch_index;
  auto flush = [&] {
    if (batch.empty()) return;
    auto r = remove_batch(batch);
    for (size_t i = 0; i < batch.size(); ++i) {
      RemoveOutcome& o = out[batch_index[i]];
      if (r.ok()) {
        o = std::move((*r)[i]);
      } else {
        o.key = batch[i];
        o.error = r.error();
        o.error->key = batch[i];
        o.error->message =
            fmt::format("batch of {} keys failed: {}", batch.size(), r.error().message);
      }
    }
    batch.clear();
    batch_index.clear();
  };
  for (size_t i = 0; i < keys.size(); ++i) {
    if (auto p = key_problem(keys[i])) {
      out[i] = RemoveOutcome{keys[i], invalid_key(Op::remove_many, keys[i], *p)};
      continue;
    }
    batch.push_back(keys[i]);
    batch_index.push_back(i);
    if (batch.size() == kMaxDeleteBatch) flush();
  }
  flush();
  return out;
}

ObjectResult<ListPage> S3ObjectStore::list(const ListRequest& lr) {
  if (auto p = prefix_problem(lr.prefix)) {
    return make_error(Op::list, lr.prefix, RetryClass::fatal, "invalid prefix: " + *p);
  }
  if (lr.max_keys < 1 || lr.max_keys > kMaxListKeys) {
    return make_error(Op::list, lr.prefix, RetryClass::fatal,
                      fmt::format("max_keys {} outside 1..{}", lr.max_keys, kMaxListKeys));
  }
  std::vector<std::pair<std::string, std::string>> params = {
      {"list-type", "2"}, {"max-keys", std::to_string(lr.max_keys)}};
  if (!lr.prefix.empty()) params.emplace_back("prefix", lr.prefix);
  if (!lr.continuation_token.empty())
    params.emplace_back("continuation-token", lr.continuation_token);
  HttpRequest req;
  req.method = "GET";
  req.url = url_for("", canonical_query(std::move(params)));
  req.headers = {std::string("x-amz-content-sha256: ") + std::string(kEmptySha256)};
  auto r = run(Op::list, lr.prefix, req, {200});
  if (!r.ok()) return std::move(r).error();
  auto parsed = s3xml::parse_list(r->body);
  if (!parsed.ok()) return bad_response(Op::list, lr.prefix, 200, parsed.error().message);
  ListPage page;
  for (size_t i = 0; i < parsed->objects.size(); ++i) {
    const auto& o = parsed->objects[i];
    if (o.key.compare(0, lr.prefix.size(), lr.prefix) != 0) {
      return bad_response(Op::list, lr.prefix, 200,
                          fmt::format("listed key '{}' lacks the prefix", o.key));
    }
    if (i > 0 && !(parsed->objects[i - 1].key < o.key)) {
      return bad_response(Op::list, lr.prefix, 200,
                          fmt::format("listed keys out of order at '{}'", o.key));
    }
  }
  if (parsed->objects.size() > size_t(lr.max_keys)) {
    return bad_response(
        Op::list, lr.prefix, 200,
        fmt::format("{} keys listed, max-keys was {}", parsed->objects.size(), lr.max_keys));
  }
  page.objects = std::move(parsed->objects);
  if (parsed->truncated) page.next_token = std::move(parsed->next_token);
  return page;
}

ObjectStatus S3ObjectStore::check_access() {
  HttpRequest req;
  req.method = "HEAD";
  req.url = url_for("");
  req.headers = {std::string("x-amz-content-sha256: ") + std::string(kEmptySha256)};
  auto r = run(Op::check, config_.bucket, req, {200});
  if (r.ok()) return {};
  ObjectError e = std::move(r).error();
  if (e.http_status == 403) {
    e.message = fmt::format(
        "access denied: the credentials (access key '{}') are rejected or may "
        "not access bucket '{}'",
        config_.access_key_id, config_.bucket);
  } else if (e.http_status == 404) {
    e.message = fmt::format("bucket '{}' does not exist at {}", config_.bucket,
                            config_.effective_endpoint());
  }
  return e;
}

}  // namespace strata::objstore
