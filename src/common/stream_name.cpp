#include "common/stream_name.h"

#include <fmt/format.h>

#include "common/utf8.h"

namespace strata {

namespace {

// How much of an over-long name an error quotes.
constexpr size_t kQuotedBytes = 32;

// Code points shown escaped although they are valid: they are invisible and
// change how the rest of a line reads.
bool hidden(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0x200E || cp == 0x200F ||
         (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

uint32_t code_point(std::string_view seq) {
  const auto b = [&](size_t i) { return uint32_t(static_cast<unsigned char>(seq[i])); };
  switch (seq.size()) {
    case 2:
      return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
    case 3:
      return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    case 4:
      return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
    default:
      return b(0);
  }
}

void escape_bytes(std::string& out, std::string_view bytes) {
  for (char c : bytes) out += fmt::format("\\x{:02x}", uint8_t(c));
}

const char* control_name(char c) {
  switch (c) {
    case '\0':
      return "a NUL byte";
    case '\r':
      return "a carriage return";
    default:
      return "a line feed";
  }
}

}  // namespace

std::string printable_name(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_sequence_length(s, i);
    const std::string_view seq = s.substr(i, n == 0 ? 1 : n);
    if (n == 1) {
      const char c = seq[0];
      if (c >= 0x20 && c < 0x7F && c != '\\' && c != '"') {
        out.push_back(c);
      } else {
        escape_bytes(out, seq);
      }
    } else if (n > 1 && !hidden(code_point(seq))) {
      out += seq;
    } else {
      escape_bytes(out, seq);
    }
    i += seq.size();
  }
  return out;
}

namespace {

// `noun` ("stream name", "vhost name"): 1..255 bytes.
Status check_size(std::string_view noun, std::string_view name) {
  if (name.empty()) return Error(Errc::invalid_argument, fmt::format("{} is empty", noun));
  if (name.size() > kMaxStreamNameBytes) {
    // Only the start of an over-long name: the message stays readable.
    return Error(Errc::invalid_argument,
                 fmt::format("{} \"{}...\" is {} bytes; the limit is {} bytes", noun,
                             printable_name(name.substr(0, kQuotedBytes)), name.size(),
                             kMaxStreamNameBytes));
  }
  return Status::OK();
}

// Valid UTF-8 without NUL, CR or LF.
Status check_bytes(std::string_view noun, std::string_view name) {
  if (auto at = utf8_error_at(name)) {
    return Error(Errc::invalid_argument,
                 fmt::format("{} \"{}\" is not valid UTF-8: byte {:#04x} at position {}", noun,
                             printable_name(name), uint8_t(name[*at]), *at));
  }
  if (size_t at = name.find_first_of(std::string_view("\0\r\n", 3)); at != name.npos) {
    return Error(
        Errc::invalid_argument,
        fmt::format("{} \"{}\" has {} ({:#04x}) at position {}; NUL, CR and LF "
                    "are not allowed",
                    noun, printable_name(name), control_name(name[at]), uint8_t(name[at]), at));
  }
  return Status::OK();
}

Status validate_plain_name(std::string_view name) {
  STRATA_TRY(check_size("stream name", name));
  if (name.starts_with(kReservedStreamPrefix)) {
    return Error(Errc::invalid_argument,
                 fmt::format("stream name \"{}\" starts with \"{}\", which RabbitMQ reserves",
                             printable_name(name), kReservedStreamPrefix));
  }
  return check_bytes("stream name", name);
}

}  // namespace

Status validate_vhost_name(std::string_view vhost) {
  STRATA_TRY(check_size("vhost name", vhost));
  return check_bytes("vhost name", vhost);
}

std::string qualified_stream_name(std::string_view vhost, std::string_view name) {
  if (vhost == kDefaultVhost) return std::string(name);
  std::string out;
  out.reserve(vhost.size() + 1 + name.size());
  out.append(vhost);
  out.push_back(kVhostSeparator);
  out.append(name);
  return out;
}

StreamPlace split_stream_name(std::string_view stored) {
  const size_t at = stored.find(kVhostSeparator);
  if (at == stored.npos) return {kDefaultVhost, stored};
  return {stored.substr(0, at), stored.substr(at + 1)};
}

std::vector<std::pair<std::string, std::string>> stream_labels(std::string_view stored) {
  const StreamPlace p = split_stream_name(stored);
  std::vector<std::pair<std::string, std::string>> l{{"stream", std::string(p.name)}};
  if (p.vhost != kDefaultVhost) l.emplace_back("vhost", std::string(p.vhost));
  return l;
}

std::string printable_stream(std::string_view stored) {
  const StreamPlace p = split_stream_name(stored);
  if (p.vhost == kDefaultVhost) return printable_name(stored);
  return fmt::format("{} in vhost \"{}\"", printable_name(p.name), printable_name(p.vhost));
}

Status validate_stream_name(std::string_view stored) {
  const size_t at = stored.find(kVhostSeparator);
  // A name that starts with the separator is a client's name holding a line
  // feed (server/vhost_names.h keeps it so): the plain rule names the byte.
  if (at == stored.npos) return validate_plain_name(stored);
  if (at == 0) {
    STRATA_TRY(validate_plain_name(stored.substr(1)));
    return Error(Errc::invalid_argument,
                 fmt::format("stream name \"{}\" has an empty vhost", printable_name(stored)));
  }
  const StreamPlace p = split_stream_name(stored);
  STRATA_TRY(validate_vhost_name(p.vhost));
  if (p.vhost == kDefaultVhost) {
    return Error(Errc::invalid_argument,
                 fmt::format("stream name \"{}\" qualifies a name with the vhost \"/\", whose "
                             "streams are stored unqualified",
                             printable_name(stored)));
  }
  STRATA_TRY(validate_plain_name(p.name));
  if (stored.size() > kMaxStreamNameBytes) {
    return Error(Errc::invalid_argument,
                 fmt::format("stream name \"{}...\" in vhost \"{}\" is {} bytes with the vhost's "
                             "name; the limit for both is {} bytes",
                             printable_name(p.name.substr(0, kQuotedBytes)),
                             printable_name(p.vhost), stored.size(), kMaxStreamNameBytes));
  }
  return Status::OK();
}

}  // namespace strata
