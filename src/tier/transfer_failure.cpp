#include "tier/transfer_failure.h"

#include <fmt/format.h>

namespace strata::tier {

bool is_transient(const TransferFailure& f) {
  if (f.http_status != 0) {
    if (f.http_status == 408 || f.http_status == 429) return true;
    if (f.http_status >= 500 && f.http_status <= 599) return true;
  }
  if (f.s3_code == "SlowDown" || f.s3_code == "InternalError" || f.s3_code == "RequestTimeout" ||
      f.s3_code == "ServiceUnavailable") {
    return true;
  }
  // An HTTP answer that is none of the above is a definite refusal, whatever
  // Errc the shell attached to it.
  if (f.http_status != 0) return false;
  return f.code == Errc::timeout || f.code == Errc::transient || f.code == Errc::unavailable;
}

std::string TransferFailure::to_string() const {
  std::string s = std::string(errc_name(code));
  if (http_status != 0) s += fmt::format(" http {}", http_status);
  if (!s3_code.empty()) s += " " + s3_code;
  if (!message.empty()) s += ": " + message;
  return s;
}

}  // namespace strata::tier
