// The rules of the catalog's calls as pure functions of the stored entry:
// which outcome a call has and what, if anything, must be written. Every
// backend reads the entry, asks these functions, and writes what they say
// while it holds the entry's lock; so the order of the checks (absent ->
// not_found, stale epoch -> fenced, revision mismatch -> conflict) exists
// once, and the backends cannot disagree.
//
// Revisions. An entry's revision grows by one with every change. A removed
// entry raises the backend's *revision floor* to its last revision, and a
// new entry starts at floor + 1: so a stream removed and created again
// never repeats a revision it had, and a writer of the old incarnation that
// still holds an old revision gets conflict, not success (as with etcd,
// whose mod_revision is global).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "catalog/catalog.h"
#include "common/result.h"

namespace strata::catalog {

// What a call must write after the decision.
enum class Write : uint8_t { none, store, erase };

struct Decision {
  PutResult result;
  Write write = Write::none;
  StreamEntry entry;  // store: the entry to store; erase: the entry removed
};

// invalid_argument naming `what` and the stream unless epoch >= 1.
Status check_epoch(std::string_view stream, uint64_t epoch, std::string_view what);
// The checks every backend makes before looking at the store: the stream
// name, epoch >= 1 and a non-empty root key.
Status check_put_args(std::string_view stream, std::string_view root_key, uint64_t epoch);

// `stored` is the entry as stored now (nullopt: absent); the arguments are
// valid (checked above). Errc::out_of_range if a revision or epoch would
// pass 2^64 - 1 (only a damaged store gets there).
Result<StreamEntry> decide_create(const std::optional<StreamEntry>& stored, std::string_view stream,
                                  uint64_t epoch, uint64_t revision_floor);
Result<Decision> decide_put(const std::optional<StreamEntry>& stored, std::string_view stream,
                            std::string_view root_key, uint64_t epoch, uint64_t expected_revision,
                            uint64_t revision_floor);
Result<Decision> decide_bump_epoch(const std::optional<StreamEntry>& stored,
                                   uint64_t expected_revision, uint64_t min_epoch);
Decision decide_remove(const std::optional<StreamEntry>& stored, uint64_t expected_revision);

// What every backend's write keeps, checked by the backend right before it
// writes what a decision says: the write replaces exactly the entry it read
// at the expected revision (compare-and-set), an epoch never goes down, a
// revision only rises (a new entry's above the revision floor), and an
// erase takes the entry read. The rules above guarantee all of it, so a
// violation is a bug: the process stops rather than store it.
void assert_write(const std::optional<StreamEntry>& stored, uint64_t expected_revision,
                  const Decision& d, uint64_t revision_floor);

// The revision floor after `removed` is erased.
inline uint64_t floor_after_remove(uint64_t floor, const StreamEntry& removed) {
  return removed.revision > floor ? removed.revision : floor;
}

}  // namespace strata::catalog
