// Errors of the object store, as values. Every failed call names the
// operation, the key, the HTTP status and S3 error code (when a server
// answered), a message, and a retry class. The backend only classifies;
// how long to wait and how often to retry belongs to the caller (the tier's
// uploader retries `transient` fast and `fatal` slowly, and never drops).
//
// An ObjectError converts to strata::Error (and so to Status / Result<T>)
// with code Errc::transient, Errc::fatal or Errc::not_found, so STRATA_TRY
// works across the module boundary.
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "common/result.h"

namespace strata::objstore {

// What a retry may achieve.
enum class RetryClass {
  transient,  // may succeed if retried: timeouts, resets, 408/429/5xx, SlowDown...
  fatal,      // will not succeed if retried unchanged: 4xx, bad key, checksum mismatch
  not_found,  // the object does not exist (GET/HEAD of a missing key)
};

std::string_view retry_class_name(RetryClass c);

// The operation that failed, as named in messages and metrics.
enum class Op { put, get, get_range, head, remove, remove_many, list, check };

std::string_view op_name(Op op);

struct ObjectError {
  Op op = Op::get;
  std::string key;      // the object key (or prefix for list); may be empty
  int http_status = 0;  // 0 when no HTTP answer arrived (transport failure)
  std::string s3_code;  // e.g. "SlowDown", "NoSuchKey"; empty if none
  std::string message;  // what went wrong, for an operator
  RetryClass retry = RetryClass::fatal;

  // "get 'a/b': HTTP 503 SlowDown: Please reduce your request rate [transient]"
  std::string to_string() const;
  Errc errc() const;
  Error to_error() const { return Error(errc(), to_string()); }

  // Conversions so that STRATA_TRY / `return err;` work in functions
  // returning Status or Result<T>.
  operator Error() const { return to_error(); }
  operator Status() const { return Status(to_error()); }
  template <typename T>
  operator Result<T>() const {
    return Result<T>(to_error());
  }
};

// ObjectResult<T>: a T or an ObjectError (common Result with the richer
// error), plus the retry class.
template <typename T>
class [[nodiscard]] ObjectResult : public Result<T, ObjectError> {
 public:
  using Result<T, ObjectError>::Result;
  // The retry class of the error; only valid when !ok().
  RetryClass retry() const { return this->error().retry; }
};

// Success or an ObjectError.
class [[nodiscard]] ObjectStatus : public BasicStatus<ObjectError> {
 public:
  using BasicStatus<ObjectError>::BasicStatus;
  ObjectStatus(BasicStatus<ObjectError> s) : BasicStatus<ObjectError>(std::move(s)) {}
  RetryClass retry() const { return error().retry; }
};

}  // namespace strata::objstore
