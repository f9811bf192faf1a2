#include "objstore/s3_range.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "objstore/s3_http.h"

namespace strata::objstore {

namespace {

std::optional<uint64_t> parse_u64(const std::string* s) {
  uint64_t v = 0;
  if (!s || s->empty()) return std::nullopt;
  auto [p, ec] = std::from_chars(s->data(), s->data() + s->size(), v);
  if (ec != std::errc() || p != s->data() + s->size()) return std::nullopt;
  return v;
}

RangeRefusal refuse(RetryClass rc, std::string msg) {
  return RangeRefusal{rc, std::move(msg)};
}

std::string shown(const std::string* h) {
  return h ? "'" + *h + "'" : std::string("(none)");
}

}  // namespace

std::variant<RangePlan, RangeRefusal> judge_range_answer(int status,
                                                         const std::string* content_range,
                                                         const std::string* content_length,
                                                         uint64_t offset, uint64_t window) {
  const uint64_t last = offset + window - 1;
  const std::string asked = fmt::format("bytes={}-{}", offset, last);
  const std::optional<uint64_t> length = parse_u64(content_length);
  if (content_length && !length) {
    return refuse(RetryClass::transient,
                  fmt::format("malformed response: Content-Length {}", shown(content_length)));
  }

  if (status == 200) {
    if (!length) {
      return refuse(RetryClass::fatal,
                    fmt::format("the server ignored the Range header: it answered {} with 200 "
                                "and no Content-Length; aborted before the body",
                                asked));
    }
    if (offset >= *length) {
      return refuse(RetryClass::fatal, fmt::format("range start {} is not below the object "
                                                   "size {}",
                                                   offset, *length));
    }
    // The whole object is exactly the window: nothing more than asked.
    if (offset == 0 && *length <= window) return RangePlan{*length, false};
    return refuse(RetryClass::fatal,
                  fmt::format("the server ignored the Range header: it answered {} ({} bytes "
                              "asked) with 200 and the whole object of {} bytes; aborted before "
                              "the body",
                              asked, window, *length));
  }
  if (status != 206) {
    return refuse(RetryClass::transient,
                  fmt::format("malformed response: HTTP {} to a ranged GET", status));
  }

  auto cr = parse_content_range(content_range);
  if (!cr) {
    return refuse(RetryClass::transient,
                  fmt::format("malformed response: 206 with Content-Range {}",
                              content_range ? "'" + *content_range + "'" : "'(none)'"));
  }
  const std::string got = "Content-Range " + *content_range;
  if (cr->total && offset >= *cr->total) {
    return refuse(RetryClass::fatal, fmt::format("range start {} is not below the object size {}",
                                                 offset, *cr->total));
  }
  const uint64_t want_last = cr->total ? std::min(last, *cr->total - 1) : last;
  if (cr->first > offset || cr->last < want_last) {
    return refuse(
        RetryClass::transient,
        fmt::format("malformed response: {} does not cover bytes={}-{}", got, offset, want_last));
  }
  const uint64_t span = cr->last - cr->first + 1;
  if (length && *length != span) {
    return refuse(RetryClass::transient,
                  fmt::format("malformed response: Content-Length {} does not match {} ({} "
                              "bytes); aborted before the body",
                              *length, got, span));
  }
  if (cr->first < offset || cr->last > want_last) {
    if (offset == 0 && window == 1 && cr->first == 0) return RangePlan{1, true};
    return refuse(RetryClass::fatal,
                  fmt::format("the server sent more than asked: it answered {} ({} bytes) with "
                              "{} ({} bytes); aborted before the body",
                              asked, want_last - offset + 1, got, span));
  }
  return RangePlan{span, false};
}

}  // namespace strata::objstore
