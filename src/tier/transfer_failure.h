// TransferFailure: how an object-store operation of the upload path failed,
// with its retry class. The class always comes from objstore's classifier
// (objstore/retry_class.h), the one set of rules: an ObjectError brings the
// class its backend gave it, an HTTP answer is classified as the answer to
// a PUT, a deadline is transient, and a strata Error is classified by its
// code. The tier has no rules of its own.
//
// Nothing is ever dropped: both classes are retried; transient failures
// fast, the others slowly, stalling the pipeline and raising
// `upload_stalled_offset`. (429 is transient on purpose: the original
// treated it as fatal and dropped the fragment, leaving a gap.)
#pragma once

#include <string>

#include "common/result.h"
#include "objstore/object_error.h"

namespace strata::tier {

struct TransferFailure {
  objstore::RetryClass retry = objstore::RetryClass::transient;
  int http_status = 0;  // 0 when no HTTP response was received
  std::string s3_code;  // S3 <Code> from the error body, if any
  std::string message;  // operator-facing description (key, operation)

  // The failure of an object-store call, with the class the backend gave it.
  static TransferFailure from(const objstore::ObjectError& e);
  // A failure that is not an ObjectError (a segment read, a converted
  // error): objstore::classify_errc decides.
  static TransferFailure from(const Error& e);
  // The task's deadline passed without a result: transient.
  static TransferFailure deadline(std::string what);
  // An HTTP answer to an upload (PUT), classified by objstore::classify_http.
  static TransferFailure http(int status, std::string s3_code, std::string what);

  // "transient http 503 SlowDown: put data/..."
  std::string to_string() const;
};

bool is_transient(const TransferFailure& f);

}  // namespace strata::tier
