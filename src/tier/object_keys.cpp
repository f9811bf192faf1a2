#include "tier/object_keys.h"

#include <fmt/format.h>

#include <charconv>

#include "common/crc32c.h"
#include "common/name_component.h"
#include "common/stream_name.h"
#include "tier/tier_limits.h"

namespace strata::tier {

namespace {

bool safe_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '~' || c == '-';
}

Status validate_segment(std::string_view s, const char* what) {
  if (s.empty()) return Error(Errc::invalid_argument, fmt::format("{} is empty", what));
  if (s.size() > kMaxKeySegmentBytes) {
    return Error(Errc::invalid_argument,
                 fmt::format("{} is longer than {} bytes", what, kMaxKeySegmentBytes));
  }
  if (s == "." || s == "..") {
    return Error(Errc::invalid_argument, fmt::format("{} \"{}\" is not allowed", what, s));
  }
  for (char c : s) {
    if (!safe_char(c)) {
      return Error(Errc::invalid_argument,
                   fmt::format("{} \"{}\" contains byte {:#04x}; allowed: A-Z a-z 0-9 . _ ~ -",
                               what, s, uint8_t(c)));
    }
  }
  return Status::OK();
}

void append_padded(std::string& out, uint64_t v) {
  char buf[21];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  size_t n = size_t(r.ptr - buf);
  out.append(20 - n, '0');
  out.append(buf, n);
}

void append_hex8(std::string& out, uint32_t v) {
  static const char* digits = "0123456789abcdef";
  for (int shift = 28; shift >= 0; shift -= 4) out.push_back(digits[(v >> shift) & 15]);
}

void append_dec(std::string& out, uint64_t v) {
  char buf[21];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, size_t(r.ptr - buf));
}

bool parse_dec(std::string_view s, uint64_t* v) {
  if (s.empty() || s.size() > 20) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *v, 10);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool parse_hex8(std::string_view s, uint32_t* v) {
  if (s.size() != 8) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  auto r = std::from_chars(s.data(), s.data() + s.size(), *v, 16);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

}  // namespace

std::string stream_hash8(std::string_view component) {
  std::string out;
  append_hex8(out, crc32c::value(component));
  return out;
}

Result<ObjectKeys> ObjectKeys::make(std::string_view prefix, std::string_view stream) {
  STRATA_TRY(validate_stream_name(stream));
  return with(prefix, std::string(stream), name_component(stream));
}

Result<ObjectKeys> ObjectKeys::of_component(std::string_view prefix, std::string_view component) {
  if (auto name = name_of_component(component)) {
    STRATA_TRY(validate_stream_name(*name));
    return with(prefix, std::move(*name), std::string(component));
  }
  if (!is_hashed_component(component)) {
    return Error(
        Errc::invalid_argument,
        fmt::format("\"{}\" is not the key segment of a stream name", printable_name(component)));
  }
  return with(prefix, "", std::string(component));
}

Result<ObjectKeys> ObjectKeys::with(std::string_view prefix, std::string stream,
                                    std::string component) {
  std::string_view rest = prefix;
  while (!rest.empty()) {
    size_t slash = rest.find('/');
    std::string_view seg = rest.substr(0, slash);
    STRATA_TRY(validate_segment(seg, "object key prefix segment"));
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
    if (rest.empty()) {
      return Error(Errc::invalid_argument,
                   fmt::format("object key prefix \"{}\" ends with '/'", prefix));
    }
  }
  ObjectKeys k;
  k.stream_ = std::move(stream);
  k.component_ = std::move(component);
  if (!prefix.empty()) k.base_ = std::string(prefix) + "/";
  k.base_ += stream_hash8(k.component_) + "/" + k.component_ + "/";
  return k;
}

std::string ObjectKeys::fragment(uint64_t first_offset, uint64_t epoch, uint32_t uid) const {
  std::string k;
  k.reserve(base_.size() + 48);
  k += base_;
  k += "data/";
  append_padded(k, first_offset);
  k += '.';
  append_dec(k, epoch);
  k += '.';
  append_hex8(k, uid);
  k += ".frag";
  return k;
}

std::string ObjectKeys::root(uint64_t epoch, uint32_t uid) const {
  std::string k = base_ + "meta/root.";
  append_dec(k, epoch);
  k += '.';
  append_hex8(k, uid);
  return k;
}

std::string ObjectKeys::group(uint64_t first_offset, uint32_t uid, uint8_t level) const {
  std::string k = base_ + "meta/";
  append_padded(k, first_offset);
  k += '.';
  append_hex8(k, uid);
  k += ".g";
  append_dec(k, level);
  return k;
}

std::string ObjectKeys::for_entry(const ManifestEntry& e) const {
  if (e.kind == kKindFragment) return fragment(e.offset, e.epoch, e.uid);
  return group(e.offset, e.uid, e.kind);
}

Result<ParsedKey> ObjectKeys::parse(std::string_view key) const {
  auto bad = [&](const char* why) {
    return Error(Errc::invalid_argument,
                 fmt::format("object key \"{}\" of stream {}: {}", key,
                             stream_.empty() ? component_ : printable_name(stream_), why));
  };
  if (key.substr(0, base_.size()) != base_) return bad("not under the stream's prefix");
  std::string_view rest = key.substr(base_.size());
  ParsedKey p;
  uint64_t v = 0;
  if (rest.substr(0, 5) == "data/") {
    rest.remove_prefix(5);
    // <off20>.<epoch>.<uid8>.frag
    if (rest.size() < 5 || rest.substr(rest.size() - 5) != ".frag") return bad("no .frag suffix");
    rest.remove_suffix(5);
    if (rest.size() < 20 + 1 + 1 + 1 + 8 || rest[20] != '.') return bad("malformed fragment key");
    if (!parse_dec(rest.substr(0, 20), &p.first_offset)) return bad("bad first offset");
    rest.remove_prefix(21);
    size_t dot = rest.rfind('.');
    if (dot == std::string_view::npos) return bad("malformed fragment key");
    if (!parse_dec(rest.substr(0, dot), &p.epoch)) return bad("bad epoch");
    if (!parse_hex8(rest.substr(dot + 1), &p.uid)) return bad("bad uid");
    p.type = ObjectType::fragment;
    return p;
  }
  if (rest.substr(0, 5) != "meta/") return bad("neither data/ nor meta/");
  rest.remove_prefix(5);
  if (rest.substr(0, 5) == "root.") {
    rest.remove_prefix(5);
    size_t dot = rest.rfind('.');
    if (dot == std::string_view::npos) return bad("malformed root key");
    if (!parse_dec(rest.substr(0, dot), &p.epoch)) return bad("bad epoch");
    if (!parse_hex8(rest.substr(dot + 1), &p.uid)) return bad("bad uid");
    p.type = ObjectType::root;
    return p;
  }
  // <off20>.<uid8>.g<level>
  if (rest.size() < 20 + 1 + 8 + 3 || rest[20] != '.' || rest[29] != '.' || rest[30] != 'g') {
    return bad("malformed group key");
  }
  if (!parse_dec(rest.substr(0, 20), &p.first_offset)) return bad("bad first offset");
  if (!parse_hex8(rest.substr(21, 8), &p.uid)) return bad("bad uid");
  if (!parse_dec(rest.substr(31), &v) || v == 0 || v > kMaxKind) return bad("bad level");
  p.level = uint8_t(v);
  p.type = ObjectType::group;
  return p;
}

}  // namespace strata::tier
