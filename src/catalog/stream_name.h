// Stream names as the catalog accepts them. The catalog sits below the tier
// (it must not include tier/), so it checks names itself, with the same
// rule the tier's object keys use (tier/object_keys.h): a name is
// 1..kMaxStreamNameBytes bytes of [A-Za-z0-9._~-] and not "." or "..". A
// name is part of every object key of its stream, so it must need no
// escaping in a URL or a file path; 255 bytes is also the longest key the
// embedded backend's slotstore holds.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "catalog/catalog_limits.h"
#include "common/result.h"

namespace strata::catalog {

// invalid_argument naming the stream (escaped), the offending byte and its
// position, or the length and the limit.
Status validate_stream_name(std::string_view stream);

// The name for messages: printable ASCII as is, other bytes as \xNN.
std::string printable_name(std::string_view stream);

}  // namespace strata::catalog
