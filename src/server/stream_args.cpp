#include "server/stream_args.h"

#include <fmt/format.h>

#include <charconv>
#include <limits>

namespace strata::server {
namespace {

Error bad_arg(const std::string& key, const std::string& value, const std::string& why) {
  return Error(Errc::invalid_argument, fmt::format("stream argument {}='{}': {}", key, value, why));
}

Result<uint64_t> parse_positive(const std::string& key, const std::string& value) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || p != value.data() + value.size() || v == 0) {
    return bad_arg(key, value, "expected a positive integer");
  }
  return v;
}

}  // namespace

Result<int64_t> parse_max_age(const std::string& text) {
  if (text.size() < 2) return bad_arg("max-age", text, "expected a number and one of YMDhms");
  uint64_t n = 0;
  const char* end = text.data() + text.size() - 1;
  auto [p, ec] = std::from_chars(text.data(), end, n);
  if (ec != std::errc() || p != end || n == 0) {
    return bad_arg("max-age", text, "expected a positive number and one of YMDhms");
  }
  int64_t unit_s = 0;
  switch (text.back()) {
    case 'Y':
      unit_s = 365 * 86400;
      break;
    case 'M':
      unit_s = 30 * 86400;
      break;
    case 'D':
      unit_s = 86400;
      break;
    case 'h':
      unit_s = 3600;
      break;
    case 'm':
      unit_s = 60;
      break;
    case 's':
      unit_s = 1;
      break;
    default:
      return bad_arg("max-age", text, "unit is not one of Y, M, D, h, m, s");
  }
  // Beyond 1000 years the milliseconds would overflow sooner or later.
  if (n > uint64_t(1000) * 365 * 86400 / uint64_t(unit_s)) {
    return bad_arg("max-age", text, "too long");
  }
  return int64_t(n) * unit_s * 1000;
}

Result<node::StreamSettings> parse_stream_args(
    const std::vector<std::pair<std::string, std::string>>& args) {
  node::StreamSettings out;
  for (const auto& [k, v] : args) {
    if (k == "max-length-bytes") {
      auto n = parse_positive(k, v);
      if (!n.ok()) return std::move(n).error();
      out.max_bytes = *n;
    } else if (k == "max-age") {
      auto ms = parse_max_age(v);
      if (!ms.ok()) return std::move(ms).error();
      out.max_age_ms = *ms;
    } else if (k == "stream-max-segment-size-bytes") {
      auto n = parse_positive(k, v);
      if (!n.ok()) return std::move(n).error();
      // osiris caps segments at 3 GB; a few KiB would make a file per chunk.
      if (*n < 4096 || *n > 3'000'000'000ull) {
        return bad_arg(k, v, "expected 4096..3000000000");
      }
      out.segment_bytes = *n;
    } else if (k == "x-strata-fragment-target-bytes") {
      auto n = parse_positive(k, v);
      if (!n.ok()) return std::move(n).error();
      out.fragment_target_bytes = *n;
    } else if (k == "x-strata-fragment-max-age-ms") {
      auto n = parse_positive(k, v);
      if (!n.ok()) return std::move(n).error();
      if (*n > uint64_t(std::numeric_limits<int64_t>::max())) return bad_arg(k, v, "too large");
      out.fragment_max_age_ms = int64_t(*n);
    } else if (k == "x-strata-tiering") {
      if (v != "true" && v != "false") return bad_arg(k, v, "expected true or false");
      out.tiering = v == "true";
    } else if (k == "x-strata-local-max-bytes") {
      auto n = parse_positive(k, v);
      if (!n.ok()) return std::move(n).error();
      out.local_max_bytes = *n;
    } else if (k == "x-strata-confirm") {
      auto m = node::parse_confirm_mode(v);
      if (!m) return bad_arg(k, v, "expected local or remote");
      out.confirm = *m;
    } else if (k == "queue-leader-locator" || k == "initial-cluster-size") {
      // One node: there is nothing to place.
    } else {
      return bad_arg(k, v, "unknown argument");
    }
  }
  return out;
}

}  // namespace strata::server
