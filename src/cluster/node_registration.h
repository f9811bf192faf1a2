// The value a cluster node registers under <ns>/nodes/<id> (ownership.h):
// {"address": "host:port", "tls_address": "host:port"}, each only when the
// node has that listener (docs/formats/catalog.md). One place writes and
// reads it for the ownership shell and `strata cluster status`.
#pragma once

#include <string>
#include <string_view>

namespace strata::cluster {

struct NodeRegistration {
  std::string address;      // the plain listener's; "": none
  std::string tls_address;  // the TLS listener's; "": none
};

std::string registration_value(const NodeRegistration& r);
// A member absent or not a string (an older node's registration, or a
// damaged one) reads as "".
NodeRegistration parse_registration(std::string_view value);

}  // namespace strata::cluster
