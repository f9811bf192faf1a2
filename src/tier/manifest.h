// Manifest: the index of a stream's remote tier.
//
// The *root* lists entries in offset order. An entry of kind 0 is a fragment
// object; an entry of kind k > 0 is a group object holding a run of entries
// of kind k-1 (so the kind is the entry's height in the tree). The root's
// [first_offset, next_offset) is the remote range: the first root entry may
// be a group that retention has partly consumed, and everything below
// first_offset is no longer part of the stream.
//
// The manifest changes only through edits, each validated before it is
// applied (a rejected edit changes nothing), so replaying the same edits on
// the same manifest always gives the same manifest:
//   append   one fragment at next_offset
//   truncate remove k leading root entries and move first_offset forward
//   replace  a run of same-kind entries becomes one group entry (rebalance)
//
// Rebalance keeps the root small: the first run of same-kind entries at the
// front that reaches the threshold for its kind (1024 fragments, 32 groups
// of any higher kind) is factored into one group. With those thresholds the
// root never exceeds 1349 entries (60 773 bytes) for any stream below 2^64
// fragments (docs/formats/manifest.md, "Why these thresholds"), and an offset is
// found with one group read per level: three reads for streams of up to
// 32.5 M fragments.
//
// Pure data and functions: no I/O. Group objects are read by the caller
// through a GroupFetch callback where needed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/result.h"

namespace strata::tier {

constexpr uint8_t kKindFragment = 0;
// Highest kind a decoder accepts and a rebalance creates. The thresholds
// need at most 11 for 2^64 fragments; the margin allows smaller thresholds.
constexpr uint8_t kMaxKind = 63;

struct ManifestEntry {
  uint64_t offset = 0;    // first offset covered
  int64_t first_ts = -1;  // timestamp of the first chunk covered (ms)
  int64_t last_ts = -1;   // largest chunk timestamp covered (ms)
  uint64_t size = 0;      // chunk bytes covered (a group: the sum of its entries)
  uint64_t epoch = 0;     // epoch of the uploader that wrote the object
  uint32_t uid = 0;       // random part of the object key
  uint8_t kind = kKindFragment;
  bool operator==(const ManifestEntry&) const = default;
};

// The root object's content.
struct Manifest {
  uint64_t first_offset = 0;
  uint64_t next_offset = 0;
  int64_t first_ts = -1;    // -1 when empty
  int64_t last_ts = -1;     // -1 when empty
  uint64_t total_size = 0;  // chunk bytes in [first_offset, next_offset)
  std::vector<ManifestEntry> entries;

  // An empty manifest positioned at `offset` (first = next = offset).
  static Manifest empty_at(uint64_t offset);
  bool empty() const { return entries.empty(); }
  bool operator==(const Manifest&) const = default;
};

// A group object's content: entries of kind level-1 covering
// [first_offset, next_offset).
struct ManifestGroup {
  uint8_t level = 1;
  uint64_t first_offset = 0;
  uint64_t next_offset = 0;
  int64_t first_ts = -1;
  int64_t last_ts = -1;
  uint64_t total_size = 0;
  uint64_t epoch = 0;  // epoch of the uploader that wrote it
  std::vector<ManifestEntry> entries;
  bool operator==(const ManifestGroup&) const = default;
};

// Reads the group object an entry of kind > 0 points to. May fail (the
// error is passed on as a value). Returned groups are immutable and may be
// shared between readers.
using GroupFetch =
    std::function<Result<std::shared_ptr<const ManifestGroup>>(const ManifestEntry& group)>;

// ---- edits ----

struct AppendEdit {
  ManifestEntry entry;   // kind 0, entry.offset == manifest next_offset
  uint64_t next_offset;  // the fragment's next offset
  bool operator==(const AppendEdit&) const = default;
};
struct TruncateEdit {
  uint32_t remove_entries = 0;  // leading root entries wholly below first_offset
  uint64_t first_offset = 0;    // new first offset
  int64_t first_ts = -1;        // timestamp of the chunk at the new first offset
  uint64_t removed_bytes = 0;   // chunk bytes that left [first, next)
  bool operator==(const TruncateEdit&) const = default;
};
struct ReplaceEdit {
  uint32_t position = 0;  // index of the first replaced root entry
  uint32_t count = 0;     // entries replaced
  ManifestEntry group;    // the group entry that replaces them
  bool operator==(const ReplaceEdit&) const = default;
};
using ManifestEdit = std::variant<AppendEdit, TruncateEdit, ReplaceEdit>;

std::string describe(const ManifestEdit& e);

// Validates and applies one edit. On error `m` is unchanged and the error
// (Errc::invalid_argument) says which rule the edit broke.
Status apply_edit(Manifest& m, const ManifestEdit& e);

// Checks the structural rules of a root: offsets strictly increasing, the
// first entry covering first_offset, the last below next_offset, a kind-0
// first entry exactly at first_offset, entry sizes adding up without
// overflow (exactly to total_size when the root holds only fragments), and
// empty <=> first_offset == next_offset.
Status validate_manifest(const Manifest& m, const std::string& where);

// Where the uploads of the tenures after `epoch` begin: the first offset of
// the run of fragment entries at the end of `m` uploaded under a higher
// epoch; m.next_offset when the last entry's epoch is not higher. A run
// that reaches a group entry stops after it (a group's epoch is its
// rebalancer's, not its fragments'). A takeover that drops a log whose
// last chunks tenure `epoch` wrote loses what that log holds from here on
// (node/stream_open.cpp).
uint64_t uploaded_after_epoch(const Manifest& m, uint64_t epoch);

// ---- rebalance ----

struct RebalancePolicy {
  uint32_t fragment_threshold = 1024;  // fragments per kind-1 group
  uint32_t group_threshold = 32;       // entries per group of kind >= 2
  uint32_t threshold_for(uint8_t entry_kind) const {
    return entry_kind == kKindFragment ? fragment_threshold : group_threshold;
  }
};

struct RebalanceRun {
  uint32_t position = 0;  // first root entry of the run
  uint32_t count = 0;     // entries to factor (exactly the kind's threshold)
  uint8_t entry_kind = 0;
  bool operator==(const RebalanceRun&) const = default;
};

// The first run of same-kind root entries whose length reaches the
// threshold for its kind; the run to factor is its first `threshold`
// entries. None when the root needs no rebalance.
std::optional<RebalanceRun> detect_rebalance(const Manifest& m, const RebalancePolicy& p);

struct NewGroup {
  ManifestGroup object;  // what to upload
  ManifestEntry entry;   // what replaces the run in the root
  ReplaceEdit edit() const;
  uint32_t position = 0;
  uint32_t count = 0;
};

// Builds the group for `run` (which must come from detect_rebalance on `m`).
// Errors if the run is out of range, mixes kinds, or its size overflows.
Result<NewGroup> make_group(const Manifest& m, const RebalanceRun& run, uint64_t epoch,
                            uint32_t uid);

}  // namespace strata::tier
