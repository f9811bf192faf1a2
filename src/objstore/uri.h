// URL pieces for S3 requests, built canonical on purpose. libcurl 7.88's
// SigV4 signs the path and query exactly as given (curl issue #9717), so
// what we send must already be the SigV4 canonical form: every byte outside
// RFC 3986's unreserved set (A-Z a-z 0-9 - . _ ~) percent-encoded with
// UPPERCASE hex, '/' kept in paths, query parameters sorted by encoded name
// (then value), and "name=" for empty values.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::objstore {

// RFC 3986 percent-encoding; '/' is kept when keep_slash.
std::string uri_encode(std::string_view s, bool keep_slash);

// Decodes %XX escapes; false on a malformed escape.
bool uri_decode(std::string_view s, std::string* out);

// "a=1&b=&c=x%2Fy": encoded, sorted, '=' always present.
std::string canonical_query(std::vector<std::pair<std::string, std::string>> params);

}  // namespace strata::objstore
