// The pure rules of raftmeta's writes (no I/O, no clock, no locks):
//  - what a store does to a server's metadata, including Ra's #111 rule: a
//    term change clears the vote in the same change;
//  - which slotstore fields differ between two states (only those are
//    written);
//  - when high-frequency writes (last_applied) are due for an fsync.
#pragma once

#include <cstdint>
#include <optional>

#include "raftmeta/meta_schema.h"
#include "raftmeta/server_meta.h"

namespace strata::raftmeta {

// The slotstore fields in which `a` and `b` differ.
FieldMask diff(const ServerMeta& a, const ServerMeta& b);

// The state after storing `v` into field `f` of `cur` (`v` has the type of
// `f`; check_value validates that). Storing a current_term different from
// the current one also clears voted_for: a vote belongs to one term, and a
// crash must never leave a newer term paired with an older term's vote.
// Storing an equal value changes nothing.
ServerMeta apply_store(const ServerMeta& cur, Field f, const FieldValue& v);

// When written-but-unsynced high-frequency fields must be fsynced: at most
// `interval_ns` after the first such write (so a crash loses at most that
// much last_applied progress). Any fsync resets it.
class PeriodicSync {
 public:
  explicit PeriodicSync(int64_t interval_ns) : interval_ns_(interval_ns) {}

  // A batch was written to the WAL at `now` without an fsync.
  void on_unsynced_write(int64_t now_ns) {
    if (!first_unsynced_ns_) first_unsynced_ns_ = now_ns;
  }
  // Everything written so far was fsynced.
  void on_sync() { first_unsynced_ns_.reset(); }
  // The time an fsync is due, if anything is unsynced.
  std::optional<int64_t> deadline_ns() const {
    if (!first_unsynced_ns_) return std::nullopt;
    return *first_unsynced_ns_ + interval_ns_;
  }
  bool due(int64_t now_ns) const {
    auto d = deadline_ns();
    return d && now_ns >= *d;
  }

 private:
  int64_t interval_ns_;
  std::optional<int64_t> first_unsynced_ns_;
};

}  // namespace strata::raftmeta
