// One HTTP exchange over a pooled libcurl handle, signed with libcurl's
// built-in AWS SigV4 (CURLOPT_AWS_SIGV4; never hand-rolled). The caller
// builds the URL already canonical (uri.h) and the x-amz-content-sha256
// header; this layer runs the transfer under the deadlines and reports
// what happened without interpreting S3 semantics (s3_store.cpp does).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "net/curl_pool.h"
#include "objstore/object_store.h"
#include "objstore/retry_class.h"

namespace strata::objstore {

struct HttpResponse;

struct HttpSettings {
  std::string region;
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;
  int connect_timeout_ms = 5'000;
  int request_timeout_ms = 120'000;
  int stall_timeout_ms = 15'000;
  bool tls_verify = true;
  std::string ca_file;  // "": the system's CAs
};

struct HttpRequest {
  std::string method;                // GET, HEAD, PUT, POST, DELETE
  std::string url;                   // scheme://host[:port]/canonical-path?canonical-query
  std::vector<std::string> headers;  // "Name: value", signed by libcurl
  BodyParts body;                    // PUT/POST payload
  // Called as the payload goes out (PutOptions::on_progress): 0 as a send
  // begins, then the bytes handed to libcurl so far, every kBodyStepBytes
  // or so and at the end. A resend begins again with 0.
  std::function<void(uint64_t sent)> on_body_progress;
  // Streaming a 2xx answer (both optional). on_headers runs once the final
  // status line and headers are in, before any body byte (also when the
  // body is empty); on_data receives the body as it arrives, which then is
  // not kept in HttpResponse::body. Either returning false aborts the
  // transfer at once (HttpResponse::aborted); the caller knows why.
  std::function<bool(const HttpResponse&)> on_headers;
  std::function<bool(const char* data, size_t n)> on_data;
};

struct HttpResponse {
  TransportFailure failure = TransportFailure::none;
  std::string transport_message;  // libcurl's explanation when failure != none
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  // 2xx: the payload, unless the request streamed it (on_data). Other
  // statuses: the first 64 KiB of the error body.
  Bytes body;
  uint64_t body_bytes = 0;  // bytes of body received from the server
  bool aborted = false;     // on_headers or on_data stopped the transfer

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
