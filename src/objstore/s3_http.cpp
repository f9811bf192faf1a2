#include "objstore/s3_http.h"

#include <curl/curl.h>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace strata::objstore {

namespace {

constexpr size_t kMaxErrorBody = 64 * 1024;
// Never pre-allocate more than this from a Content-Length header: a bogus
// header must not be able to allocate gigabytes up front.
constexpr uint64_t kMaxReserve = 256ull << 20;

struct Exchange {
  const HttpRequest* req;
  HttpResponse* resp;
  // Upload cursor over the body parts.
  size_t part = 0;
  size_t part_pos = 0;
  uint64_t sent = 0;           // body bytes handed to libcurl in this pass
  uint64_t reported = 0;       // ... as last told on_body_progress
  bool pass_reported = false;  // this pass's 0 was told
  // Download state.
  bool body_started = false;
  bool success_status = false;
};

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r' || s[e - 1] == '\n'))
    --e;
  return std::string(s.substr(b, e - b));
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  HttpResponse& r = *ex->resp;
  std::string_view line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {
    // A new status line (after "100 Continue" or a redirect) starts over.
    r.headers.clear();
    auto sp = line.find(' ');
    if (sp != std::string_view::npos)
      r.status = std::atoi(std::string(line.substr(sp + 1, 3)).c_str());
    return size * n;
  }
  if (line == "\r\n" || line == "\n") {
    // The end of a header block: a streaming caller looks at a final 2xx
    // answer before its body, and may refuse it without reading a byte.
    if (r.status >= 200 && r.status < 300 && ex->req->on_headers && !ex->req->on_headers(r)) {
      r.aborted = true;
      return 0;
    }
    return size * n;
  }
  auto colon = line.find(':');
  if (colon != std::string_view::npos) {
    std::string name(line.substr(0, colon));
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    r.headers[name] = trim(line.substr(colon + 1));
  }
  return size * n;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  HttpResponse& r = *ex->resp;
  const size_t len = size * n;
  if (!ex->body_started) {
    ex->body_started = true;
    ex->success_status = r.status >= 200 && r.status < 300;
    if (ex->success_status && !ex->req->on_data) {
      if (const std::string* cl = r.header("content-length")) {
        reserve_body(&r.body,
                     std::min<uint64_t>(std::strtoull(cl->c_str(), nullptr, 10), kMaxReserve));
      }
    }
  }
  r.body_bytes += len;
  if (!ex->success_status) {
    if (r.body.size() < kMaxErrorBody) {
      r.body.append(data, std::min(len, kMaxErrorBody - r.body.size()));
    }
    return len;
  }
  if (ex->req->on_data) {
    if (ex->req->on_data(data, len)) return len;
    r.aborted = true;
    return 0;
  }
  r.body.append(data, len);
  return len;
}

size_t on_read(char* buf, size_t size, size_t n, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  const size_t cap = size * n;
  size_t out = 0;
  BodyParts parts = ex->req->body;
  const auto& progress = ex->req->on_body_progress;
  if (progress && !ex->pass_reported) {
    ex->pass_reported = true;
    progress(0);
  }
  while (out < cap && ex->part < parts.size()) {
    BytesView p = parts[ex->part];
    size_t take = std::min(cap - out, p.size() - ex->part_pos);
    std::memcpy(buf + out, p.data() + ex->part_pos, take);
    out += take;
    ex->part_pos += take;
    if (ex->part_pos == p.size()) {
      ++ex->part;
      ex->part_pos = 0;
    }
  }
  ex->sent += out;
  if (progress && ex->sent > ex->reported &&
      (ex->sent - ex->reported >= kBodyStepBytes || ex->part == parts.size())) {
    ex->reported = ex->sent;
    progress(ex->sent);
  }
  return out;
}

// libcurl may rewind the upload to resend it (a reused connection that
// turned out dead, or an authentication round): start the body over.
int on_seek(void* user, curl_off_t offset, int origin) {
  auto* ex = static_cast<Exchange*>(user);
  if (origin != SEEK_SET || offset != 0) return CURL_SEEKFUNC_CANTSEEK;
  ex->part = 0;
  ex->part_pos = 0;
  ex->sent = 0;
  ex->reported = 0;
  ex->pass_reported = false;
  return CURL_SEEKFUNC_OK;
}

TransportFailure map_curl(CURLcode rc, CURL* h) {
  switch (rc) {
    case CURLE_OK:
      return TransportFailure::none;
    case CURLE_COULDNT_CONNECT:
      return TransportFailure::connect_refused;
    case CURLE_OPERATION_TIMEDOUT: {
      curl_off_t connect_us = 0;
      curl_easy_getinfo(h, CURLINFO_CONNECT_TIME_T, &connect_us);
      return connect_us == 0 ? TransportFailure::connect_timeout : TransportFailure::timeout;
    }
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
      return TransportFailure::reset;
    case CURLE_GOT_NOTHING:
      return TransportFailure::no_response;
    case CURLE_PARTIAL_FILE:
      return TransportFailure::truncated;
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_BAD_CONTENT_ENCODING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_HTTP3:
      return TransportFailure::bad_response;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      return TransportFailure::resolve;
    case CURLE_SSL_CONNECT_ERROR:
      return TransportFailure::tls_handshake;
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
      return TransportFailure::tls_verify;
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_BAD_FUNCTION_ARGUMENT:
    case CURLE_NOT_BUILT_IN:
    case CURLE_UNKNOWN_OPTION:
      return TransportFailure::bad_request;
    default:
      return TransportFailure::other;
  }
}

}  // namespace

std::optional<ContentRange> parse_content_range(const std::string* h) {
  if (!h) return std::nullopt;
  std::string_view s = *h;
  if (s.rfind("bytes ", 0) != 0) return std::nullopt;
  s.remove_prefix(6);
  auto dash = s.find('-'), slash = s.find('/');
  if (dash == std::string_view::npos || slash == std::string_view::npos || dash > slash) {
    return std::nullopt;
  }
  auto num = [](std::string_view t, uint64_t* v) {
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), *v);
    return !t.empty() && ec == std::errc() && p == t.data() + t.size();
  };
  ContentRange cr;
  if (!num(s.substr(0, dash), &cr.first)) return std::nullopt;
  if (!num(s.substr(dash + 1, slash - dash - 1), &cr.last)) return std::nullopt;
  std::string_view total = s.substr(slash + 1);
  if (total != "*") {
    uint64_t t;
    if (!num(total, &t)) return std::nullopt;
    cr.total = t;
  }
  if (cr.last < cr.first) return std::nullopt;
  return cr;
}

HttpResponse perform(CURL* h, const HttpSettings& s, const HttpRequest& req) {
  HttpResponse resp;
  Exchange ex{&req, &resp};
  char errbuf[CURL_ERROR_SIZE] = {0};

  curl_easy_reset(h);
  curl_easy_setopt(h, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_HTTP_VERSION, long(CURL_HTTP_VERSION_1_1));
  // Send the path exactly as built (and signed): no dot-segment squashing.
  curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, long(s.connect_timeout_ms));
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, long(s.request_timeout_ms));
  // Stall deadline: less than 1 byte/s for stall_timeout (curl counts whole
  // seconds, rounded up here so a deadline is never shortened).
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, long((s.stall_timeout_ms + 999) / 1000));
  // Large receive buffer: fewer write callbacks for big objects. (The upload
  // buffer stays at libcurl's default, as the curl tool uses it: no larger
  // size measured faster against s3rver.)
  curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 512L * 1024);
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, s.tls_verify ? 1L : 0L);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, s.tls_verify ? 2L : 0L);
  if (!s.ca_file.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, s.ca_file.c_str());

  const std::string sigv4 = "aws:amz:" + s.region + ":s3";
  curl_easy_setopt(h, CURLOPT_AWS_SIGV4, sigv4.c_str());
  curl_easy_setopt(h, CURLOPT_USERNAME, s.access_key_id.c_str());
  curl_easy_setopt(h, CURLOPT_PASSWORD, s.secret_access_key.c_str());

  curl_slist* headers = nullptr;
  for (const auto& hd : req.headers) headers = curl_slist_append(headers, hd.c_str());
  std::string token_header;
  if (!s.session_token.empty()) {
    token_header = "x-amz-security-token: " + s.session_token;
    headers = curl_slist_append(headers, token_header.c_str());
  }
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);

  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &ex);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &ex);

  uint64_t body_size = 0;
  for (BytesView p : req.body) body_size += p.size();
  if (req.method == "HEAD") {
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else if (req.method == "PUT") {
    curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(h, CURLOPT_READDATA, &ex);
    curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, on_seek);
    curl_easy_setopt(h, CURLOPT_SEEKDATA, &ex);
    curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, curl_off_t(body_size));
  } else if (req.method == "POST") {
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(h, CURLOPT_READDATA, &ex);
    curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, on_seek);
    curl_easy_setopt(h, CURLOPT_SEEKDATA, &ex);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body_size));
  } else if (req.method != "GET") {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req.method.c_str());
  }

  CURLcode rc = curl_easy_perform(h);
  curl_slist_free_all(headers);
  // Undo pointers into this frame before the handle goes back to the pool.
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, nullptr);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, nullptr);

  long code = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
  if (code != 0) resp.status = int(code);
  resp.failure = map_curl(rc, h);
  if (resp.failure != TransportFailure::none) {
    resp.transport_message = errbuf[0] ? std::string(errbuf) : curl_easy_strerror(rc);
  }
  return resp;
}

}  // namespace strata::objstore
