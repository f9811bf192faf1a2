#include "objstore/object_error.h"

#include <fmt/format.h>

namespace strata::objstore {

std::string_view retry_class_name(RetryClass c) {
  switch (c) {
    case RetryClass::transient:
      return "transient";
    case RetryClass::fatal:
      return "fatal";
    case RetryClass::not_found:
      return "not_found";
  }
  return "fatal";
}

std::string_view op_name(Op op) {
  switch (op) {
    case Op::put:
      return "put";
    case Op::get:
      return "get";
    case Op::get_range:
      return "ranged get";
    case Op::head:
      return "head";
    case Op::remove:
      return "delete";
    case Op::remove_many:
      return "delete-many";
    case Op::list:
      return "list";
    case Op::check:
      return "check";
  }
  return "?";
}

Errc ObjectError::errc() const {
  switch (retry) {
    case RetryClass::transient:
      return Errc::transient;
    case RetryClass::fatal:
      return Errc::fatal;
    case RetryClass::not_found:
      return Errc::not_found;
  }
  return Errc::fatal;
}

std::string ObjectError::to_string() const {
  std::string s = fmt::format("{} '{}': ", op_name(op), key);
  if (http_status != 0) s += fmt::format("HTTP {} ", http_status);
  if (!s3_code.empty()) s += s3_code + " ";
  if (http_status != 0 || !s3_code.empty()) s.back() = ':', s += " ";
  s += message;
  s += fmt::format(" [{}]", retry_class_name(retry));
  return s;
}

}  // namespace strata::objstore
