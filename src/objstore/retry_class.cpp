#include "objstore/retry_class.h"

#include <array>

namespace strata::objstore {

namespace {

using V = HttpVerdict;

constexpr HttpRule code(std::string_view c, V v, std::string_view group) {
  return HttpRule{c, 0, 0, v, group};
}
constexpr HttpRule status(int lo, int hi, V v, std::string_view group) {
  return HttpRule{"", lo, hi, v, group};
}

// Codes first: S3 sends some transient conditions with a 4xx status
// (RequestTimeout with 400, OperationAborted with 409) and some fatal ones
// with a status that would otherwise be retried or read as a missing key
// (NotImplemented with 501, NoSuchBucket with 404).
constexpr std::array kRules = {
    code("SlowDown", V::transient, "throttling"),
    code("Throttling", V::transient, "throttling"),
    code("ThrottlingException", V::transient, "throttling"),
    code("RequestThrottled", V::transient, "throttling"),
    code("InternalError", V::transient, "server"),
    code("ServiceUnavailable", V::transient, "server"),
    code("RequestTimeout", V::transient, "server"),
    code("OperationAborted", V::transient, "conflicting bucket operation"),
    code("BadDigest", V::fatal, "checksum"),
    code("InvalidDigest", V::fatal, "checksum"),
    code("XAmzContentSHA256Mismatch", V::fatal, "checksum"),
    code("InvalidChecksum", V::fatal, "checksum"),
    code("ChecksumMismatch", V::fatal, "checksum"),
    code("NoSuchBucket", V::fatal, "wrong bucket"),
    code("NotImplemented", V::fatal, "never served"),
    code("NoSuchKey", V::missing_key, "missing key"),
    status(408, 408, V::transient, "server"),
    status(429, 429, V::transient, "throttling"),
    status(501, 501, V::fatal, "never served"),
    status(500, 599, V::transient, "server"),
    status(404, 404, V::missing_key, "missing key"),
};

bool matches(const HttpRule& r, int http_status, std::string_view s3_code) {
  if (!r.s3_code.empty()) return r.s3_code == s3_code;
  return http_status >= r.status_min && http_status <= r.status_max;
}

}  // namespace

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

std::span<const HttpRule> http_rules() {
  return kRules;
}

const HttpRule* find_http_rule(int http_status, std::string_view s3_code) {
  for (const HttpRule& r : kRules) {
    if (matches(r, http_status, s3_code)) return &r;
  }
  return nullptr;
}

RetryClass classify_http(Op op, int http_status, std::string_view s3_code) {
  const HttpRule* r = find_http_rule(http_status, s3_code);
  if (r == nullptr) return RetryClass::fatal;
  switch (r->verdict) {
    case HttpVerdict::transient:
      return RetryClass::transient;
    case HttpVerdict::fatal:
      return RetryClass::fatal;
    case HttpVerdict::missing_key:
      switch (op) {
        case Op::get:
        case Op::get_range:
        case Op::head:
        case Op::remove:
          return RetryClass::not_found;
        case Op::put:
        case Op::remove_many:
        case Op::list:
        case Op::check:
          return RetryClass::fatal;
      }
  }
  return RetryClass::fatal;
}

RetryClass classify_errc(Errc code) {
  switch (code) {
    case Errc::transient:
    case Errc::timeout:
    case Errc::unavailable:
      return RetryClass::transient;
    case Errc::not_found:
      return RetryClass::not_found;
    default:
      return RetryClass::fatal;
  }
}

bool is_checksum_code(std::string_view s3_code) {
  const HttpRule* r = find_http_rule(0, s3_code);
  return r != nullptr && !r->s3_code.empty() && r->group == "checksum";
}

}  // namespace strata::objstore
