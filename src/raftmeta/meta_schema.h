// How raftmeta's values are laid out in a slotstore: the schema, the field
// mask used to write only the fields that changed, and the conversions
// between ServerMeta and slotstore records. docs/formats/raftmeta.md, "Schema".
//
//   key             the server id (uid), 1..max_id_bytes bytes
//   0 current_term  u64                      low  (fsynced with its batch)
//   1 voted_name    bytes(max_name_bytes)    low
//   2 voted_node    interned(max_node_bytes) low  (few distinct node names)
//   3 last_applied  u64                      high (WAL only; periodic fsync)
//
// voted_for is two fields so that each vote form maps to a distinct state:
// none = both absent, bare name = name only, {name, node} = both. A term
// change writes the term and clears both vote fields in one put, which
// slotstore applies atomically.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "raftmeta/server_meta.h"
#include "slotstore/schema.h"

namespace strata::raftmeta {

inline constexpr slotstore::FieldId kTermField = 0;
inline constexpr slotstore::FieldId kVoteNameField = 1;
inline constexpr slotstore::FieldId kVoteNodeField = 2;
inline constexpr slotstore::FieldId kAppliedField = 3;

// A set of slotstore fields (bit i = field i).
using FieldMask = uint8_t;
inline constexpr FieldMask kTermBit = 1u << kTermField;
inline constexpr FieldMask kVoteNameBit = 1u << kVoteNameField;
inline constexpr FieldMask kVoteNodeBit = 1u << kVoteNodeField;
inline constexpr FieldMask kAppliedBit = 1u << kAppliedField;
inline constexpr FieldMask kVoteBits = kVoteNameBit | kVoteNodeBit;
inline constexpr FieldMask kLowBits = kTermBit | kVoteBits;
inline constexpr FieldMask kAllBits = kLowBits | kAppliedBit;

// Length bounds of a store, fixed when it is created (stored in its schema).
struct Bounds {
  uint32_t max_id_bytes = 64;     // server ids: 1..this (at most 255)
  uint32_t max_name_bytes = 255;  // voted_for name (at most 4096)
  uint32_t max_node_bytes = 255;  // voted_for node (at most 1024)

  bool operator==(const Bounds&) const = default;
};
// An Erlang atom has at most 255 characters, so at most 1020 UTF-8 bytes.
inline constexpr uint32_t kMaxAtomBytes = 1020;

// invalid_argument if a bound is out of range.
Status validate(const Bounds& b);
slotstore::Schema make_schema(const Bounds& b);
// The bounds of `schema` if it has raftmeta's fields, kinds and frequencies;
// schema_mismatch naming the difference otherwise (`path` names the file).
Result<Bounds> bounds_of(const slotstore::Schema& schema, const std::string& path);

// A server's record. corrupt (naming `path` and the id) if a node is stored
// without a name, which raftmeta never writes.
Result<ServerMeta> decode_record(const slotstore::Record& rec, BytesView id,
                                 const std::string& path);
// The updates that make a stored record equal `m` in the fields of `mask`
// (set if present in `m`, clear if absent).
std::vector<slotstore::FieldUpdate> field_updates(const ServerMeta& m, FieldMask mask);
// The same, appended to `out` (a list reused from batch to batch).
void append_field_updates(const ServerMeta& m, FieldMask mask,
                          std::vector<slotstore::FieldUpdate>* out);

// invalid_argument / key_too_long naming the id and field when `id` or a
// value does not fit `b` or `v` has the wrong type for `f`.
Status check_id(const Bounds& b, BytesView id);
Status check_value(const Bounds& b, BytesView id, Field f, const FieldValue& v);

// An id for messages: printable ASCII quoted, anything else as hex.
std::string describe_id(BytesView id);

}  // namespace strata::raftmeta
