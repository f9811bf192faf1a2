// One HTTP exchange over a pooled libcurl handle, signed with libcurl's
// built-in AWS SigV4 (CURLOPT_AWS_SIGV4; never hand-rolled). The caller
// builds the URL already canonical (uri.h) and the x-amz-content-sha256
// header; this layer runs the transfer under the deadlines and reports
// what happened without interpreting S3 semantics (s3_store.cpp does).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "objstore/curl_pool.h"
#include "objstore/object_store.h"
#include "objstore/retry_class.h"

namespace strata::objstore {

struct HttpSettings {
  std::string region;
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;
  int connect_timeout_ms = 5'000;
  int request_timeout_ms = 120'000;
  int stall_timeout_ms = 15'000;
  bool tls_verify = true;
};

struct HttpRequest {
  std::string method;                // GET, HEAD, PUT, POST, DELETE
  std::string url;                   // scheme://host[:port]/canonical-path?canonical-query
  std::vector<std::string> headers;  // "Name: value", signed by libcurl
  BodyParts body;                    // PUT/POST payload
  // For a ranged GET: the window [offset, offset + length) asked for. The
  // answer is sliced to it while streaming — a 200 (the server ignored
  // Range) from object offset 0, a 206 from its Content-Range start (some
  // servers send more than asked) — so memory stays bounded by the window.
  std::optional<std::pair<uint64_t, uint64_t>> range;
  // Compute the CRC32C of a 2xx body while it streams in (cache-hot, and
  // overlapped with waiting for the network), if the answer carries the
  // header named here (e.g. "x-amz-meta-crc32c"); empty: never.
  std::string crc_if_header;
};

struct HttpResponse {
  TransportFailure failure = TransportFailure::none;
  std::string transport_message;  // libcurl's explanation when failure != none
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  // 2xx: the payload (for a ranged request: already sliced to the window).
  // Other statuses: the first 64 KiB of the error body.
  Bytes body;
  uint64_t body_bytes = 0;           // bytes of body received from the server
  bool stopped_early = false;        // the window was complete; the rest was not read
  std::optional<uint32_t> body_crc;  // see HttpRequest::crc_if_header

  const std::string* header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? nullptr : &it->second;
  }
};

// "bytes 10-19/100" -> first 10, last 19, total 100 (nullopt for "*").
struct ContentRange {
  uint64_t first = 0, last = 0;
  std::optional<uint64_t> total;
};
std::optional<ContentRange> parse_content_range(const std::string* header);

// Runs the request on `h` (reset first; its connection cache is kept).
HttpResponse perform(CURL* h, const HttpSettings& s, const HttpRequest& req);

}  // namespace strata::objstore
