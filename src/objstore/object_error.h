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

// ObjectResult<T>: a T or an ObjectError (Result<T> with a richer error).
template <typename T>
class [[nodiscard]] ObjectResult {
 public:
  ObjectResult(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  ObjectResult(ObjectError e) : v_(std::in_place_index<1>, std::move(e)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const ObjectError& error() const& {
    assert(!ok());
    return std::get<1>(v_);
  }
  ObjectError&& error() && {
    assert(!ok());
    return std::get<1>(std::move(v_));
  }
  // The retry class of the error; only valid when !ok().
  RetryClass retry() const { return error().retry; }

  Result<T> to_result() && {
    if (ok()) return Result<T>(std::get<0>(std::move(v_)));
    return Result<T>(std::get<1>(v_).to_error());
  }

 private:
  std::variant<T, ObjectError> v_;
};

// Success or an ObjectError.
class [[nodiscard]] ObjectStatus {
 public:
  ObjectStatus() = default;
  ObjectStatus(ObjectError e) : err_(std::move(e)), failed_(true) {}

  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const ObjectError& error() const& {
    assert(failed_);
    return err_;
  }
  ObjectError&& error() && {
    assert(failed_);
    return std::move(err_);
  }
  RetryClass retry() const { return error().retry; }
  Status to_status() const { return failed_ ? Status(err_.to_error()) : Status::OK(); }

 private:
  ObjectError err_;
  bool failed_ = false;
};

}  // namespace strata::objstore
