// The schema of a slot store: a bounded key and a fixed list of typed fields.
//
// A field's type is one element (a scalar) or a tuple of elements; an element
// is a u64, a bounded byte string, or an interned string (stored as an id into
// the store's bounded string table, for values repeated across many keys such
// as node names). Every field of every key is either present or absent
// ("cleared"); a tuple is present or absent as a whole.
//
// Each field is declared low or high frequency:
//  - low:  a batch that sets or clears a low field is fsynced before
//          write_batch returns (durable on write);
//  - high: written to the WAL (page cache) only; durable after the next
//          sync(), or any later durable batch.
//
// The schema is stored in the file header in a canonical encoding; opening a
// file with a different schema is Errc::schema_mismatch (migrate instead).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"

namespace strata::slotstore {

// Index of a field in Schema::fields.
using FieldId = uint8_t;

enum class Frequency : uint8_t { low = 0, high = 1 };

enum class ElementKind : uint8_t { u64 = 1, bytes = 2, interned = 3 };

// Limits of a schema (checked by Schema::validate).
inline constexpr size_t kMaxFields = 64;
inline constexpr size_t kMaxFieldNameLen = 64;
inline constexpr size_t kMaxTupleElements = 16;
inline constexpr uint16_t kMaxBytesLen = 4096;     // bytes(n): n <= this
inline constexpr uint16_t kMaxInternedLen = 1024;  // interned(n): n <= this
inline constexpr size_t kMaxKeyLen = 255;

struct Element {
  ElementKind kind = ElementKind::u64;
  uint16_t max_len = 0;  // bytes/interned: longest value in bytes; u64: 0

  bool operator==(const Element&) const = default;
};

struct FieldType {
  std::vector<Element> elements;  // exactly one unless `tuple`
  bool tuple = false;

  static FieldType u64();
  static FieldType bytes(uint16_t max_len);
  static FieldType interned(uint16_t max_len);
  // A tuple of scalar types (u64/bytes/interned; no nested tuples).
  static FieldType tuple_of(std::vector<FieldType> scalars);

  // "u64", "bytes(200)", "(interned(64),interned(64))".
  std::string to_string() const;
  bool operator==(const FieldType&) const = default;
};

struct FieldSpec {
  std::string name;  // 1..kMaxFieldNameLen bytes, unique in the schema
  FieldType type;
  Frequency frequency = Frequency::low;

  bool operator==(const FieldSpec&) const = default;
};

struct Schema {
  uint8_t max_key_len = 64;  // keys are 1..max_key_len bytes (max_key_len <= 255)
  std::vector<FieldSpec> fields;

  // invalid_argument naming the offending field if a limit above is broken.
  Status validate() const;
  // The id of a field by name, or unknown_field naming it.
  Result<FieldId> field_id(std::string_view name) const;
  // Canonical bytes (stored in the file header; equal schemas encode equally).
  Bytes encode() const;
  static Result<Schema> decode(BytesView in);
  // "max_key=64 current_term:u64/low voted_for:(interned(255),interned(255))/low ..."
  std::string to_string() const;

  bool operator==(const Schema&) const = default;
};

// A scalar value: u64, or the bytes of a bytes/interned element.
using Scalar = std::variant<uint64_t, std::string>;

// A present field value: a scalar, or a tuple of scalars.
class Value {
 public:
  static Value u64(uint64_t v) { return Value(Rep(std::in_place_index<0>, v)); }
  static Value str(std::string s) { return Value(Rep(std::in_place_index<1>, std::move(s))); }
  static Value tuple(std::vector<Scalar> elements) {
    return Value(Rep(std::in_place_index<2>, std::move(elements)));
  }

  bool is_u64() const { return rep_.index() == 0; }
  bool is_str() const { return rep_.index() == 1; }
  bool is_tuple() const { return rep_.index() == 2; }
  // Accessors require the matching kind (checked by STRATA_ASSERT).
  uint64_t as_u64() const;
  const std::string& as_str() const;
  const std::vector<Scalar>& elements() const;

  // For logs, tests and the CLI: 42, "name", (1, "a").
  std::string to_string() const;
  bool operator==(const Value&) const = default;

 private:
  using Rep = std::variant<uint64_t, std::string, std::vector<Scalar>>;
  explicit Value(Rep r) : rep_(std::move(r)) {}
  Rep rep_;
};

// All fields of one key, indexed by FieldId; nullopt = absent.
struct Record {
  std::vector<std::optional<Value>> fields;

  const std::optional<Value>& operator[](FieldId f) const { return fields.at(f); }
  std::string to_string() const;
  bool operator==(const Record&) const = default;
};

// One field change inside a put: a new value, or nullopt to clear the field.
struct FieldUpdate {
  FieldId field = 0;
  std::optional<Value> value;

  bool operator==(const FieldUpdate&) const = default;
};
inline FieldUpdate set(FieldId f, Value v) {
  return FieldUpdate{f, std::move(v)};
}
inline FieldUpdate clear(FieldId f) {
  return FieldUpdate{f, std::nullopt};
}

}  // namespace strata::slotstore
