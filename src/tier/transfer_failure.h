// TransferFailure: how an object-store operation of the upload path failed,
// and the one rule that decides whether it is retried fast (transient) or
// stalls the pipeline with slow retries (fatal). Nothing is ever dropped:
// both kinds are retried; they differ only in delay and in raising
// `upload_stalled_offset`.
//
// Transient: deadlines and timeouts, connection errors, HTTP 408, 429 and
// every 5xx, S3 codes SlowDown, InternalError, RequestTimeout,
// ServiceUnavailable, and the Errc codes timeout / transient / unavailable.
// Everything else (403, 404 on PUT, checksum mismatch, a local segment that
// fails its CRC) is fatal: retrying at full speed would not help and would
// hide the problem.
//
// 429 is transient on purpose: the original treated it as fatal and dropped
// the fragment, leaving a gap in the remote tier.
#pragma once

#include <string>

#include "common/result.h"

namespace strata::tier {

struct TransferFailure {
  Errc code = Errc::transient;  // the error class as the shell saw it
  int http_status = 0;          // 0 when no HTTP response was received
  std::string s3_code;          // S3 <Code> from the error body, if any
  std::string message;          // operator-facing description (key, operation)

  static TransferFailure deadline(std::string what) {
    return TransferFailure{Errc::timeout, 0, "", std::move(what)};
  }
  static TransferFailure http(int status, std::string s3_code, std::string what) {
    return TransferFailure{Errc::io, status, std::move(s3_code), std::move(what)};
  }
  std::string to_string() const;
};

bool is_transient(const TransferFailure& f);

}  // namespace strata::tier
