#include "objstore/uri.h"

#include <algorithm>

namespace strata::objstore {

namespace {
bool unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}
int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

std::string uri_encode(std::string_view s, bool keep_slash) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size() * 3 / 2 + 8);
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (unreserved(c) || (keep_slash && c == '/')) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

bool uri_decode(std::string_view s, std::string* out) {
  out->clear();
  out->reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out->push_back(s[i]);
      continue;
    }
    if (i + 2 >= s.size()) return false;
    int hi = hexval(s[i + 1]), lo = hexval(s[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(char(hi * 16 + lo));
    i += 2;
  }
  return true;
}

std::string canonical_query(std::vector<std::pair<std::string, std::string>> params) {
  for (auto& [k, v] : params) {
    k = uri_encode(k, false);
    v = uri_encode(v, false);
  }
  std::sort(params.begin(), params.end());
  std::string q;
  for (const auto& [k, v] : params) {
    if (!q.empty()) q.push_back('&');
    q += k;
    q.push_back('=');
    q += v;
  }
  return q;
}

}  // namespace strata::objstore
