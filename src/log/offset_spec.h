// Where a reader starts: `first`, `last`, `next`, `offset:N`, `timestamp:T`
// (osiris offset specs). Resolution rules are in StreamLog::resolve().
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace strata::log {

struct OffsetSpec {
  enum class Kind {
    first,      // the oldest chunk available
    last,       // the last committed chunk (the whole chunk is delivered)
    next,       // the next offset to be written: only new records
    offset,     // the record at `value` (records before it in its chunk are skipped)
    timestamp,  // the first chunk whose timestamp >= `value` (ms since the Unix epoch)
  };
  Kind kind = Kind::next;
  int64_t value = 0;  // offset (as uint64) or timestamp ms

  static OffsetSpec first() { return {Kind::first, 0}; }
  static OffsetSpec last() { return {Kind::last, 0}; }
  static OffsetSpec next() { return {Kind::next, 0}; }
  static OffsetSpec at_offset(uint64_t o) { return {Kind::offset, int64_t(o)}; }
  static OffsetSpec at_timestamp(int64_t ms) { return {Kind::timestamp, ms}; }

  uint64_t offset() const { return uint64_t(value); }
  bool operator==(const OffsetSpec&) const = default;
};

// Parses "first", "last", "next", "offset:N" (or a bare N), "timestamp:T"
// (T in ms since the Unix epoch). Errors name the bad text.
Result<OffsetSpec> parse_offset_spec(std::string_view text);
std::string to_string(const OffsetSpec& spec);

}  // namespace strata::log
