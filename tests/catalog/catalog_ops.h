// Random catalog calls, their text form and an independent model of their
// outcomes, shared by the crash tests (fault-injecting file system) and the
// kill -9 child. The model is written from the contract in catalog/catalog.h,
// not from catalog/entry_rules.h, so the crash tests also check the rules.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "catalog/catalog.h"
#include "common/random.h"
#include "common/result.h"

namespace strata::catalog::ops {

struct Op {
  enum class Kind : uint8_t { create, put, bump_epoch, remove };
  Kind kind = Kind::put;
  std::string stream;
  std::string root_key;    // put
  uint64_t epoch = 0;      // create, put
  uint64_t expected = 0;   // put, bump_epoch, remove
  uint64_t min_epoch = 0;  // bump_epoch

  bool operator==(const Op&) const = default;
};

// One line, no newline: "create S E", "put S ROOT E EXP", "bump S EXP MIN",
// "remove S EXP". Names and root keys hold no spaces.
std::string format_op(const Op& op);
Result<Op> parse_op(std::string_view line);

// A stream of a small set (so calls collide), one of them 255 bytes long.
std::string random_stream(Random& rng);
// A call on `stream`, mostly valid against `current` (its stored entry, if
// any), sometimes with a stale revision, a lower epoch, or on a missing
// entry, so every outcome happens.
Op random_op(Random& rng, const std::string& stream, const std::optional<StreamEntry>& current);

// Runs the call; the outcome as text: "ok REV EPOCH", "conflict REV EPOCH",
// "fenced REV EPOCH", "not_found", "exists". A backend error is the error.
Result<std::string> run_op(Catalog& c, const Op& op);

struct Model {
  std::map<std::string, StreamEntry> entries;
  uint64_t floor = 0;  // highest revision of a removed entry

  // Applies the call by the contract; the outcome as run_op gives it.
  std::string apply(const Op& op);
  std::optional<StreamEntry> find(const std::string& stream) const;
  bool operator==(const Model&) const = default;
};

// Entries as "name epoch revision root" lines, for failure messages.
std::string describe(const std::map<std::string, StreamEntry>& entries);

}  // namespace strata::catalog::ops
