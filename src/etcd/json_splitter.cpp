#include "etcd/json_splitter.h"

#include <fmt/format.h>

namespace strata::etcd {

std::optional<Result<std::string>> JsonSplitter::next() {
  for (; scan_ < buf_.size(); ++scan_) {
    const char c = buf_[scan_];
    if (start_ == std::string::npos) {
      if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
      if (c != '{') {
        return Result<std::string>(Error(
            Errc::corrupt, fmt::format("expected a JSON object in the stream, found byte 0x{:02x}",
                                       static_cast<unsigned char>(c))));
      }
      start_ = scan_;
      depth_ = 0;
    }
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      continue;
    }
    if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if (c == '}' || c == ']') {
      if (--depth_ == 0) {
        std::string doc = buf_.substr(start_, scan_ + 1 - start_);
        buf_.erase(0, scan_ + 1);
        scan_ = 0;
        start_ = std::string::npos;
        return Result<std::string>(std::move(doc));
      }
    }
  }
  return std::nullopt;
}

}  // namespace strata::etcd
