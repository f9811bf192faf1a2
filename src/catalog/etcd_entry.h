// The value of an etcd catalog entry (E in etcd_catalog.h), as pure
// functions: encode and decode, with errors naming the key.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "catalog/catalog.h"
#include "common/result.h"

namespace strata::catalog {

struct EtcdEntryValue {
  uint64_t epoch = 0;
  std::string root_key;
  std::string op;  // the nonce of the write that stored it
};

// invalid_argument if the root key is not UTF-8 (JSON holds only that).
Result<std::string> encode_entry_value(const EtcdEntryValue& v, std::string_view stream);
// Errc::corrupt naming `key` for anything but what encode writes.
Result<EtcdEntryValue> decode_entry_value(std::string_view value, std::string_view key);
// The epoch as P holds it: 20 zero-padded decimal digits.
std::string padded_epoch(uint64_t epoch);
// A fresh random nonce (16 hex digits).
std::string new_op_nonce();

}  // namespace strata::catalog
