// Retry classification: a pure function of what happened on the wire, and
// the one set of rules strata has for it. The S3 backend maps libcurl's
// result to a TransportFailure and the server's answer to (HTTP status, S3
// error code); the tier's uploader takes its retry class from here too
// (tier/transfer_failure.h) instead of deciding on its own. Callers choose
// delays from the class; nothing here waits or retries.
//
// HTTP answers are classified by the first rule of http_rules() that
// matches (an S3 code rule matches whatever the status, so a code decides
// before its status; an empty code - HEAD answers, bodies that are not
// XML - leaves the status to decide). No matching rule: fatal. In short:
//  - transient: HTTP 408, 429, every 5xx but 501; S3 codes SlowDown,
//    Throttling, ThrottlingException, RequestThrottled, InternalError,
//    ServiceUnavailable, RequestTimeout (sent with 400) and
//    OperationAborted (409: a conflicting operation on the bucket is in
//    progress, and S3 says to retry);
//  - not_found: 404 / NoSuchKey on an operation that reads or deletes one
//    key (get, ranged get, head, delete);
//  - fatal: everything else - other 4xx, 3xx, 404 on put/list/batch delete,
//    NoSuchBucket (even on a read), 501 / NotImplemented (a request this
//    server will never serve), checksum mismatches (BadDigest, ...).
// Transport failures: timeouts, refused/reset connections, no, truncated
// or garbled answers, DNS and TLS handshake failures are transient; TLS
// verification failures and requests the client cannot build are fatal.
#pragma once

#include <span>
#include <string_view>

#include "common/result.h"
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

// What an HTTP rule decides.
enum class HttpVerdict {
  transient,
  fatal,
  // not_found for an operation on one existing key (get, get_range, head,
  // remove); fatal for put, list, remove_many and check, which cannot miss a
  // key: their 404 means a wrong bucket or endpoint.
  missing_key,
};

// One rule of the HTTP table.
struct HttpRule {
  std::string_view s3_code;  // this S3 <Code> exactly, whatever the status; "" = any code
  int status_min = 0;        // with s3_code "": statuses in [status_min, status_max]
  int status_max = 0;
  HttpVerdict verdict = HttpVerdict::fatal;
  std::string_view group;  // "throttling", "server", "checksum", ... (for is_checksum_code, docs)
};

// The rules, in the order they are tried.
std::span<const HttpRule> http_rules();
// The first rule matching the answer, or nullptr (then: fatal).
const HttpRule* find_http_rule(int http_status, std::string_view s3_code);

// Class of an HTTP answer with status >= 300, or of a per-key error inside a
// 200 answer (s3_code may be empty when the body was empty, as for HEAD, or
// not XML).
RetryClass classify_http(Op op, int http_status, std::string_view s3_code);

// Class of a failure that reaches a caller as a strata Error instead of an
// ObjectError: an ObjectError converted to Error keeps its class (codes
// transient, fatal, not_found); a deadline (timeout) or a backend not ready
// (unavailable) is transient; anything else (io, corrupt, invalid_argument,
// ... a local failure such as a segment failing its CRC) is fatal.
RetryClass classify_errc(Errc code);

// True for S3 error codes that mean "the bytes did not match their checksum".
bool is_checksum_code(std::string_view s3_code);

}  // namespace strata::objstore
