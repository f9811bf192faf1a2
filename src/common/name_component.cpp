#include "common/name_component.h"

#include <openssl/evp.h>

#include "common/bytes.h"
#include "common/utf8.h"

namespace strata {

namespace {

constexpr std::string_view kHashMark = "%%";
constexpr size_t kHashHexDigits = 64;

bool kept(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '~' || c == '-' || (c == '.' && !first);
}

void append_escaped(std::string& out, char c, bool first) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  if (kept(c, first)) {
    out.push_back(c);
    return;
  }
  const auto b = static_cast<unsigned char>(c);
  out.push_back(kComponentEscape);
  out.push_back(kHex[b >> 4]);
  out.push_back(kHex[b & 15]);
}

std::string escaped(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (size_t i = 0; i < name.size(); ++i) append_escaped(out, name[i], i == 0);
  return out;
}

// The escaped form of the longest prefix of `name` that ends between two
// UTF-8 characters (a byte that is not UTF-8 counts as one) and whose
// escaped form fits `limit` bytes.
std::string escaped_prefix(std::string_view name, size_t limit) {
  std::string out;
  for (size_t i = 0; i < name.size();) {
    size_t n = utf8_sequence_length(name, i);
    if (n == 0) n = 1;
    std::string piece;
    for (size_t k = 0; k < n; ++k) append_escaped(piece, name[i + k], i + k == 0);
    if (out.size() + piece.size() > limit) break;
    out += piece;
    i += n;
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  return to_hex(BytesView(reinterpret_cast<const char*>(md), len));
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;  // lowercase is not canonical: each byte has one escape
}

// Undoes the escapes of an escaped form (or prefix); nullopt on a '%' not
// followed by two uppercase hex digits. Canonicity is the caller's check.
std::optional<std::string> unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != kComponentEscape) {
      out.push_back(s[i]);
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    const int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(char(hi * 16 + lo));
    i += 2;
  }
  return out;
}

}  // namespace

std::string name_component(std::string_view name) {
  std::string e = escaped(name);
  if (e.size() <= kMaxNameComponentBytes) return e;
  std::string out = escaped_prefix(name, kHashedPrefixBytes);
  out += kHashMark;
  out += sha256_hex(name);
  return out;
}

std::optional<std::string> name_of_component(std::string_view component) {
  if (component.empty() || component.size() > kMaxNameComponentBytes) return std::nullopt;
  auto name = unescape(component);
  if (!name || name->empty() || escaped(*name) != component) return std::nullopt;
  return name;
}

bool is_hashed_component(std::string_view component) {
  if (component.size() > kMaxNameComponentBytes) return false;
  const size_t mark = component.find(kHashMark);
  if (mark == std::string_view::npos || mark == 0 || mark > kHashedPrefixBytes) return false;
  const std::string_view prefix = component.substr(0, mark);
  const std::string_view hash = component.substr(mark + kHashMark.size());
  if (hash.size() != kHashHexDigits) return false;
  for (char c : hash) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  auto head = unescape(prefix);
  return head && escaped(*head) == prefix;
}

bool is_name_component(std::string_view component) {
  return name_of_component(component).has_value() || is_hashed_component(component);
}

}  // namespace strata
