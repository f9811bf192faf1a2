#include "tier/transfer_failure.h"

#include <fmt/format.h>

#include "objstore/retry_class.h"

namespace strata::tier {

using objstore::RetryClass;

TransferFailure TransferFailure::from(const objstore::ObjectError& e) {
  return TransferFailure{e.retry, e.http_status, e.s3_code, e.to_string()};
}

TransferFailure TransferFailure::from(const Error& e) {
  return TransferFailure{objstore::classify_errc(e.code), 0, "", e.to_string()};
}

TransferFailure TransferFailure::deadline(std::string what) {
  return TransferFailure{RetryClass::transient, 0, "", std::move(what)};
}

TransferFailure TransferFailure::http(int status, std::string s3_code, std::string what) {
  RetryClass c = objstore::classify_http(objstore::Op::put, status, s3_code);
  return TransferFailure{c, status, std::move(s3_code), std::move(what)};
}

bool is_transient(const TransferFailure& f) {
  return f.retry == RetryClass::transient;
}

std::string TransferFailure::to_string() const {
  std::string s(objstore::retry_class_name(retry));
  if (http_status != 0) s += fmt::format(" http {}", http_status);
  if (!s3_code.empty()) s += " " + s3_code;
  if (!message.empty()) s += ": " + message;
  return s;
}

}  // namespace strata::tier
