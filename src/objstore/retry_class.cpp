#include "objstore/retry_class.h"

#include <array>

namespace strata::objstore {

std::string_view transport_failure_name(TransportFailure f) {
  switch (f) {
    case TransportFailure::none:
      return "none";
    case TransportFailure::connect_refused:
      return "connection refused";
    case TransportFailure::connect_timeout:
      return "connect timeout";
    case TransportFailure::timeout:
      return "timeout";
    case TransportFailure::reset:
      return "connection reset";
    case TransportFailure::no_response:
      return "no response";
    case TransportFailure::truncated:
      return "truncated body";
    case TransportFailure::bad_response:
      return "malformed response";
    case TransportFailure::resolve:
      return "host not resolved";
    case TransportFailure::tls_handshake:
      return "TLS handshake failed";
    case TransportFailure::tls_verify:
      return "TLS verification failed";
    case TransportFailure::bad_request:
      return "bad request";
    case TransportFailure::other:
      return "transport error";
  }
  return "transport error";
}

RetryClass classify_transport(TransportFailure f) {
  switch (f) {
    case TransportFailure::connect_refused:
    case TransportFailure::connect_timeout:
    case TransportFailure::timeout:
    case TransportFailure::reset:
    case TransportFailure::no_response:
    case TransportFailure::truncated:
    case TransportFailure::bad_response:
    // DNS and TLS handshakes fail during network trouble and recover.
    case TransportFailure::resolve:
    case TransportFailure::tls_handshake:
      return RetryClass::transient;
    case TransportFailure::none:
    case TransportFailure::tls_verify:
    case TransportFailure::bad_request:
    case TransportFailure::other:
      return RetryClass::fatal;
  }
  return RetryClass::fatal;
}

bool is_checksum_code(std::string_view c) {
  static constexpr std::array<std::string_view, 5> codes = {"BadDigest", "InvalidDigest",
                                                            "XAmzContentSHA256Mismatch",
                                                            "InvalidChecksum", "ChecksumMismatch"};
  for (auto x : codes)
    if (c == x) return true;
  return false;
}

RetryClass classify_http(Op op, int status, std::string_view code) {
  // Throttling and server-side trouble, by code: S3 sends RequestTimeout
  // with 400 and SlowDown with 503, other stores use other statuses.
  static constexpr std::array<std::string_view, 8> transient_codes = {
      "SlowDown",   "InternalError",       "RequestTimeout",   "ServiceUnavailable",
      "Throttling", "ThrottlingException", "RequestThrottled", "OperationAborted"};
  for (auto c : transient_codes)
    if (code == c) return RetryClass::transient;
  if (is_checksum_code(code)) return RetryClass::fatal;
  if (code == "NoSuchBucket") return RetryClass::fatal;

  if (status == 408 || status == 429) return RetryClass::transient;
  if (status >= 500 && status <= 599) {
    return status == 501 ? RetryClass::fatal : RetryClass::transient;
  }
  if (status == 404 || code == "NoSuchKey") {
    switch (op) {
      case Op::get:
      case Op::get_range:
      case Op::head:
      case Op::remove:
        return RetryClass::not_found;
      // A PUT, LIST or batch delete cannot miss a key: its 404 means the
      // bucket (or endpoint path) is wrong.
      case Op::put:
      case Op::remove_many:
      case Op::list:
      case Op::check:
        return RetryClass::fatal;
    }
  }
  return RetryClass::fatal;
}

}  // namespace strata::objstore
