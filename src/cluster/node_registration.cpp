#include "cluster/node_registration.h"

#include <nlohmann/json.hpp>

namespace strata::cluster {

using nlohmann::json;

std::string registration_value(const NodeRegistration& r) {
  json reg = json::object();
  // Older nodes read "address" only: a node without a plain listener
  // registers none, and they do not dial it.
  if (!r.address.empty()) reg["address"] = r.address;
  if (!r.tls_address.empty()) reg["tls_address"] = r.tls_address;
  return reg.dump();
}

NodeRegistration parse_registration(std::string_view value) {
  const json j = json::parse(value, nullptr, false);
  auto text = [&j](const char* k) {
    return j.is_object() && j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : "";
  };
  return NodeRegistration{text("address"), text("tls_address")};
}

}  // namespace strata::cluster
