// Errors as values. Every fallible call in strata returns Status or
// Result<T>; no exception crosses a module API. An Error carries a code that
// callers can branch on and a message that names what failed and where
// (file, position, key, operation), so it can be shown to an operator as is.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace strata {

enum class Errc {
  ok = 0,
  io,                   // the operating system refused (errno in message)
  not_found,            // no such file, key, stream, object
  already_exists,       // create of something that exists
  corrupt,              // stored bytes fail validation (checksum, magic, bounds)
  invalid_argument,     // caller passed something malformed
  unsupported_version,  // a format version this build does not read
  unsupported,          // valid stored data this build cannot interpret (e.g. compressed records)
  schema_mismatch,      // a stored schema differs from the one asked for
  store_full,           // fixed capacity exhausted
  string_table_full,    // interned-string capacity exhausted
  key_too_long,         // key exceeds the configured bound
  unknown_field,        // field name or id not in the schema
  conflict,             // compare-and-set lost
  transient,            // may succeed if retried
  fatal,                // will not succeed if retried
  timeout,              // a deadline passed
  cancelled,            // the caller or shutdown cancelled the work
  closed,               // the object was closed / is shutting down
  out_of_range,         // offset or position outside what exists
  unavailable,          // not ready yet (e.g. cache not loaded)
  fail_stopped,         // an earlier durability failure stopped the component
  simulated_crash,      // fault-injecting file system: the "machine" is down
  internal,             // a broken invariant in strata itself
};

std::string_view errc_name(Errc c);

namespace detail {
// A Result or Status used against its state (value() of an error, error()
// of a value): a bug in the caller. It stops the process with what was
// asked and, for value(), the error that was there instead — in every
// build type, since a plain assert would let a release build read the
// wrong member of the variant.
[[noreturn]] void result_misuse(const char* what, std::string_view detail);
}  // namespace detail

struct Error {
  Errc code = Errc::internal;
  std::string message;

  Error() = default;
  Error(Errc c, std::string msg) : code(c), message(std::move(msg)) {}

  // Prefixes the message with more context ("opening stream s1: ...").
  Error&& with_context(std::string_view where) && {
    message = std::string(where) + ": " + message;
    return std::move(*this);
  }
  // "code: message", for logs and CLI output.
  std::string to_string() const;
};

// Result<T>: either a T or an Error. Minimal std::expected for C++20. The
// error type is a parameter so a module with richer errors (objstore's
// ObjectError) reuses this instead of writing its own.
template <typename T, typename E = Error>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  Result(E e) : v_(std::in_place_index<1>, std::move(e)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    check_value();
    return std::get<0>(v_);
  }
  const T& value() const& {
    check_value();
    return std::get<0>(v_);
  }
  T&& value() && {
    check_value();
    return std::get<0>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const E& error() const& {
    if (ok()) [[unlikely]]
      detail::result_misuse("Result::error() of a value", "");
    return std::get<1>(v_);
  }
  E&& error() && {
    if (ok()) [[unlikely]]
      detail::result_misuse("Result::error() of a value", "");
    return std::get<1>(std::move(v_));
  }
  Errc code() const {
    if (ok()) return Errc::ok;
    if constexpr (std::is_same_v<E, Error>) {
      return error().code;
    } else {
      return error().errc();
    }
  }

 private:
  void check_value() const {
    if (ok()) [[likely]]
      return;
    detail::result_misuse("Result::value() of an error", std::get<1>(v_).to_string());
  }

  std::variant<T, E> v_;
};

// Status: success or an error (Error unless a module has a richer one).
template <typename E = Error>
class [[nodiscard]] BasicStatus {
 public:
  BasicStatus() = default;
  BasicStatus(E e) : err_(std::move(e)), failed_(true) {}
  static BasicStatus OK() { return BasicStatus(); }

  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const E& error() const& {
    if (!failed_) [[unlikely]]
      detail::result_misuse("Status::error() of OK", "");
    return err_;
  }
  E&& error() && {
    if (!failed_) [[unlikely]]
      detail::result_misuse("Status::error() of OK", "");
    return std::move(err_);
  }
  Errc code() const {
    if (!failed_) return Errc::ok;
    if constexpr (std::is_same_v<E, Error>) {
      return err_.code;
    } else {
      return err_.errc();
    }
  }
  std::string to_string() const { return failed_ ? err_.to_string() : "ok"; }

 private:
  E err_;
  bool failed_ = false;
};
using Status = BasicStatus<Error>;

inline Error make_error(Errc c, std::string msg) {
  return Error(c, std::move(msg));
}

}  // namespace strata

#define STRATA_CONCAT_INNER(a, b) a##b
#define STRATA_CONCAT(a, b) STRATA_CONCAT_INNER(a, b)

// Returns the error of a Status-returning expression from the enclosing
// function (which returns Status or Result<T>).
#define STRATA_TRY(expr)                                              \
  do {                                                                \
    auto&& strata_try_s_ = (expr);                                    \
    if (!strata_try_s_.ok()) return std::move(strata_try_s_).error(); \
  } while (0)

// `STRATA_ASSIGN_OR_RETURN(auto x, f());` declares x from a Result<T> or
// returns its error.
#define STRATA_ASSIGN_OR_RETURN(lhs, expr) \
  STRATA_ASSIGN_OR_RETURN_IMPL(STRATA_CONCAT(strata_r_, __LINE__), lhs, expr)
#define STRATA_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return std::move(tmp).error();      \
  lhs = std::move(tmp).value()
