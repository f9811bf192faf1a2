#include "catalog/etcd_entry.h"

#include <fmt/format.h>

#include <charconv>
#include <nlohmann/json.hpp>
#include <random>

#include "catalog/catalog_limits.h"
#include "common/stream_name.h"

namespace strata::catalog {

using nlohmann::json;

Result<std::string> encode_entry_value(const EtcdEntryValue& v, std::string_view stream) {
  json j = {{"epoch", std::to_string(v.epoch)}, {"root_key", v.root_key}, {"op", v.op}};
  try {
    return j.dump();
  } catch (const json::exception&) {
    return Error(Errc::invalid_argument,
                 fmt::format("etcd catalog: put of stream \"{}\": the root key is not UTF-8",
                             printable_name(stream)));
  }
}

Result<EtcdEntryValue> decode_entry_value(std::string_view value, std::string_view key) {
  auto bad = [&](std::string_view what) {
    return Error(Errc::corrupt, fmt::format("etcd catalog: the value of key \"{}\" {}",
                                            printable_name(key), what));
  };
  json j = json::parse(value, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return bad("is not a JSON object");
  auto epoch = j.find("epoch");
  auto root = j.find("root_key");
  auto op = j.find("op");
  if (epoch == j.end() || !epoch->is_string()) return bad("has no \"epoch\" string");
  if (root == j.end() || !root->is_string()) return bad("has no \"root_key\" string");
  EtcdEntryValue v;
  const auto& e = epoch->get_ref<const std::string&>();
  auto [p, ec] = std::from_chars(e.data(), e.data() + e.size(), v.epoch);
  if (ec != std::errc() || p != e.data() + e.size() || v.epoch == 0) {
    return bad(fmt::format("has epoch \"{}\", not a number >= 1", e.substr(0, kErrorSnippetBytes)));
  }
  v.root_key = root->get<std::string>();
  if (op != j.end() && op->is_string()) v.op = op->get<std::string>();
  return v;
}

std::string padded_epoch(uint64_t epoch) {
  return fmt::format("{:020}", epoch);
}

std::string new_op_nonce() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{:016x}", rng());
}

}  // namespace strata::catalog
