#include "perf/options.h"

#include <charconv>

namespace strata::perf {

namespace {
bool parse_u64(std::string_view s, uint64_t* v) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && !s.empty();
}
}  // namespace

Result<proto::OffsetSpec> parse_offset_spec(std::string_view s) {
  using proto::OffsetType;
  if (s == "first") return proto::OffsetSpec{OffsetType::first, 0};
  if (s == "last") return proto::OffsetSpec{OffsetType::last, 0};
  if (s == "next") return proto::OffsetSpec{OffsetType::next, 0};
  uint64_t v = 0;
  if (!s.empty() && s[0] == '@' && parse_u64(s.substr(1), &v)) {
    return proto::OffsetSpec{OffsetType::timestamp, int64_t(v)};
  }
  if (parse_u64(s, &v)) return proto::OffsetSpec{OffsetType::offset, int64_t(v)};
  return make_error(
      Errc::invalid_argument,
      "--offset: expected first, last, next, an offset or @<ms>, got '" + std::string(s) + "'");
}

Status apply_uri(std::string_view uri, ConnectOptions* o) {
  std::string_view rest = uri;
  if (auto p = rest.find("://"); p != std::string_view::npos) rest = rest.substr(p + 3);
  if (auto at = rest.rfind('@'); at != std::string_view::npos) {
    std::string_view cred = rest.substr(0, at);
    rest = rest.substr(at + 1);
    auto colon = cred.find(':');
    o->username = std::string(cred.substr(0, colon));
    if (colon != std::string_view::npos) o->password = std::string(cred.substr(colon + 1));
  }
  if (auto slash = rest.find('/'); slash != std::string_view::npos) {
    std::string_view vhost = rest.substr(slash + 1);
    o->virtual_host = vhost.empty() || vhost == "%2f" || vhost == "%2F" ? "/" : std::string(vhost);
    rest = rest.substr(0, slash);
  }
  if (auto colon = rest.rfind(':'); colon != std::string_view::npos) {
    uint64_t port = 0;
    if (!parse_u64(rest.substr(colon + 1), &port) || port == 0 || port > 65535) {
      return make_error(Errc::invalid_argument, "--uri: bad port in '" + std::string(uri) + "'");
    }
    o->port = uint16_t(port);
    rest = rest.substr(0, colon);
  }
  if (!rest.empty()) o->host = std::string(rest);
  return {};
}

}  // namespace strata::perf
