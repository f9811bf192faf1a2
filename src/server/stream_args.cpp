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

// A positive integer into one field of the settings.
template <auto field>
Status positive_into(const std::string& key, const std::string& value, node::StreamSettings& out) {
  STRATA_ASSIGN_OR_RETURN(out.*field, parse_positive(key, value));
  return Status::OK();
}

// One argument and how it sets the stream's settings: parse_stream_args
// reads by this table, stream_arg_names() lists it.
struct StreamArg {
  const char* name;
  Status (*apply)(const std::string& key, const std::string& value, node::StreamSettings& out);
};

constexpr StreamArg kArgs[] = {
    {"max-length-bytes", positive_into<&node::StreamSettings::max_bytes>},
    {"max-age",
     [](const std::string&, const std::string& v, node::StreamSettings& out) -> Status {
       STRATA_ASSIGN_OR_RETURN(out.max_age_ms, parse_max_age(v));
       return Status::OK();
     }},
    {"stream-max-segment-size-bytes",
     [](const std::string& k, const std::string& v, node::StreamSettings& out) -> Status {
       STRATA_ASSIGN_OR_RETURN(uint64_t n, parse_positive(k, v));
       // osiris caps segments at 3 GB; a few KiB would make a file per chunk.
       if (n < 4096 || n > 3'000'000'000ull) return bad_arg(k, v, "expected 4096..3000000000");
       out.segment_bytes = n;
       return Status::OK();
     }},
    {"x-strata-fragment-target-bytes", positive_into<&node::StreamSettings::fragment_target_bytes>},
    {"x-strata-fragment-max-age-ms",
     [](const std::string& k, const std::string& v, node::StreamSettings& out) -> Status {
       STRATA_ASSIGN_OR_RETURN(uint64_t n, parse_positive(k, v));
       if (n > uint64_t(std::numeric_limits<int64_t>::max())) return bad_arg(k, v, "too large");
       out.fragment_max_age_ms = int64_t(n);
       return Status::OK();
     }},
    {"x-strata-tiering",
     [](const std::string& k, const std::string& v, node::StreamSettings& out) -> Status {
       if (v != "true" && v != "false") return bad_arg(k, v, "expected true or false");
       out.tiering = v == "true";
       return Status::OK();
     }},
    {"x-strata-local-max-bytes", positive_into<&node::StreamSettings::local_max_bytes>},
    {"x-strata-confirm",
     [](const std::string& k, const std::string& v, node::StreamSettings& out) -> Status {
       auto m = node::parse_confirm_mode(v);
       if (!m) return bad_arg(k, v, "expected local, remote or replicated");
       out.confirm = *m;
       return Status::OK();
     }},
    {"stream-filter-size-bytes",
     [](const std::string& k, const std::string& v, node::StreamSettings& out) -> Status {
       STRATA_ASSIGN_OR_RETURN(uint64_t n, parse_positive(k, v));
       if (n < node::kMinFilterSizeBytes || n > node::kMaxFilterSizeBytes) {
         return bad_arg(k, v, "expected 16..255");
       }
       out.filter_size_bytes = n;
       return Status::OK();
     }},
    // One node: there is nothing to place.
    {"queue-leader-locator",
     [](const std::string&, const std::string&, node::StreamSettings&) { return Status::OK(); }},
    // The nodes a replicated confirm counts a majority of (node/stream_settings.h).
    {"initial-cluster-size", positive_into<&node::StreamSettings::initial_cluster_size>},
};

constexpr std::string_view kStrataArgPrefix = "x-strata-";

const StreamArg* find_arg(const std::string& name) {
  for (const auto& a : kArgs) {
    if (name == a.name) return &a;
  }
  return nullptr;
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
    const std::vector<std::pair<std::string, std::string>>& args,
    std::vector<std::string>* ignored) {
  node::StreamSettings out;
  for (const auto& [k, v] : args) {
    const StreamArg* a = find_arg(k);
    // As RabbitMQ: a client may send arguments for other servers or
    // versions. strata's own prefix is checked, so a typo is not ignored.
    if (!a && k.starts_with(kStrataArgPrefix)) return bad_arg(k, v, "unknown strata argument");
    if (!a) {
      if (ignored) ignored->push_back(k);
      continue;
    }
    STRATA_TRY(a->apply(k, v, out));
  }
  return out;
}

std::vector<std::string> stream_arg_names() {
  std::vector<std::string> out;
  for (const auto& a : kArgs) out.emplace_back(a.name);
  return out;
}

}  // namespace strata::server
