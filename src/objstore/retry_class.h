// Retry classification: a pure function of what happened on the wire. The
// S3 backend maps libcurl's result to a TransportFailure and the server's
// answer to (HTTP status, S3 error code); these functions decide the class.
// Rules (issue 3, DESIGN.md "Uploader"):
//  - transient: connect/read timeouts, connection refused/reset, no or a
//    truncated/garbled answer; HTTP 408, 429, 500, 502, 503, 504 (and any
//    other 5xx but 501); S3 codes SlowDown, InternalError, RequestTimeout,
//    ServiceUnavailable, Throttling — whatever the status, also with an
//    empty body (then the status alone decides);
//  - not_found: 404 / NoSuchKey on an operation that reads or deletes one key;
//  - fatal: every other 4xx (400, 403, 404 on PUT/LIST, NoSuchBucket, 416),
//    501, checksum mismatch (BadDigest, XAmzContentSHA256Mismatch, ...),
//    TLS verification failures and malformed requests.
#pragma once

#include <string_view>

#include "objstore/object_error.h"

namespace strata::objstore {

// Transport-level outcome of one request, independent of libcurl.
enum class TransportFailure {
  none,             // a complete HTTP answer arrived
  connect_refused,  // TCP connection refused / host unreachable
  connect_timeout,  // no TCP connection within the connect deadline
  timeout,          // the request's total or stall deadline passed
  reset,            // connection reset or broken while sending/receiving
  no_response,      // the server closed the connection without an answer
  truncated,        // the body ended before its Content-Length
  bad_response,     // not a parseable HTTP answer
  resolve,          // host name did not resolve
  tls_handshake,    // TLS handshake failed (may be transient)
  tls_verify,       // peer certificate rejected
  bad_request,      // the client could not build the request (bad URL...)
  other,            // anything else
};

std::string_view transport_failure_name(TransportFailure f);

RetryClass classify_transport(TransportFailure f);

// Class of an HTTP answer with status >= 300 (s3_code may be empty when the
// body was empty, as for HEAD, or not XML).
RetryClass classify_http(Op op, int http_status, std::string_view s3_code);

// True for S3 error codes that mean "the bytes did not match their checksum".
bool is_checksum_code(std::string_view s3_code);

}  // namespace strata::objstore
