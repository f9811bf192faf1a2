// GC, the pure core: which objects under a node's key prefix may be
// deleted. No I/O, no clock: the shell (gc_run.h) lists, reads the catalog
// and the manifests, and passes the time in.
//
// The shell works in this order, and the rules rely on it:
//   1. read `now`, then list the prefix (objects PUT after the listing are
//      never candidates: they are not in it);
//   2. then read the catalog and, for every listed stream in it, its
//      persisted manifest tree (root, groups): a root committed before the
//      listing is seen, and so is every object it references;
//   3. plan (plan_gc);
//   4. re-read the catalog and drop the candidates of every stream whose
//      entry changed since step 2 (drop_changed): reported as skipped;
//   5. delete the rest in batches.
//
// GC knows a stream by its key segment, its component (object_keys.h,
// common/name_component.h): a long name's component is a hash that cannot
// be decoded, and a stream the catalog no longer holds has no name to look
// up. The shell maps the catalog's names to components.
//
// The rules, for one listed object; the first that applies decides:
//   1. unparsable  — the key is not a tier key of the stream its path names
//                    (object_keys.h): kept. GC deletes only what it can name.
//   2. no_time     — the store gave no last-modified time: kept.
//   3. referenced  — the stream's current manifest tree references it: kept.
//   4. unknown_tree — the stream is in the catalog but its tree was not read
//                    exactly (root or a group missing, corrupt or
//                    unreadable): every object of the stream is kept, since
//                    what it references is not known.
//   5. young       — last modified less than `grace` before `now`: kept.
//   6. In a stream in the catalog, what a persist in flight will reference:
//      a. pending_fragment — a fragment whose key's epoch is >= the entry's
//         epoch and whose first offset is >= the persisted next offset: the
//         uploader of that epoch PUT it for its next persist, however long
//         that persist stalls. (An epoch above the entry's cannot be in a
//         listing taken before the entry was read; kept all the same.)
//      b. pending_meta — a root or group last modified no earlier than the
//         current root's last-modified time minus `grace`: a persist or a
//         rebalance in flight writes them after the current root was
//         written. With no root yet, or the root's time unknown, every root
//         and group of the stream is kept (the first persist may be in
//         flight).
//   7. candidate   — otherwise: unreferenced in a stream of the catalog, or a
//                    stream the catalog does not hold (deleted, or a crash
//                    in the middle of deleting it).
// Times are the store's (S3 gives whole seconds); grace also absorbs the
// skew between the store's clock and the GC host's.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/catalog.h"
#include "objstore/object_store.h"
#include "tier/object_keys.h"

namespace strata::tier {

// One stream as GC read it after the listing.
struct GcStream {
  std::optional<catalog::StreamEntry> entry;  // nullopt: not in the catalog
  bool exact = false;                         // tree read exactly (rule 4)
  std::string why_unknown;                    // when !exact: what could not be read
  std::set<std::string> referenced;           // root, groups and fragments
  uint64_t next_offset = 0;                   // the persisted manifest's next offset
  std::optional<int64_t> root_last_modified_ms;
};

enum class GcVerdict : uint8_t {
  candidate,
  unparsable,
  no_time,
  referenced,
  unknown_tree,
  young,
  pending_fragment,
  pending_meta,
  entry_changed,  // a candidate dropped by drop_changed
};
std::string_view gc_verdict_name(GcVerdict v);

// A key of the node's prefix split into its stream's component and tier
// key; nullopt when it is not one.
struct NodeKey {
  std::string component;
  ParsedKey parsed;
};
std::optional<NodeKey> parse_node_key(std::string_view prefix, std::string_view key);

// Rules 2..7 for an object whose key parsed. `stream` is the stream's state
// (its entry is nullopt when it is not in the catalog).
GcVerdict gc_verdict(const NodeKey& key, const objstore::ObjectInfo& object, const GcStream& stream,
                     int64_t now_ms, int64_t grace_ms);

struct GcObject {
  std::string key;
  std::string component;  // of the object's stream; "" when the key did not parse
  uint64_t size = 0;
  std::optional<int64_t> age_ms;  // now - last modified
  GcVerdict verdict = GcVerdict::candidate;
  bool operator==(const GcObject&) const = default;
};

struct GcPlan {
  std::vector<GcObject> candidates;  // to delete
  std::vector<GcObject> kept;        // kept for a reason other than `referenced`
  std::vector<GcObject> skipped;     // candidates dropped by drop_changed
  // Every listed object by stream component ("" for unparsable keys) and
  // verdict.
  std::map<std::string, std::map<GcVerdict, uint64_t>> counts;
  uint64_t count(GcVerdict v) const;
  uint64_t candidate_bytes() const;
};

// Plans the listing. `streams` holds, by component, every stream named by
// a parsable listed key (a stream missing from the map is treated as not
// in the catalog).
GcPlan plan_gc(const std::vector<objstore::ObjectInfo>& listing, std::string_view prefix,
               const std::map<std::string, GcStream>& streams, int64_t now_ms, int64_t grace_ms);

// Step 4: moves to `skipped` (verdict entry_changed) the candidates of
// every stream whose entry in `now` (the re-read catalog by component;
// absent = not in the catalog) differs from the one the plan used, by
// presence or revision — created, deleted, re-created, taken over or
// persisted to since. Returns the components concerned.
std::set<std::string> drop_changed(GcPlan& plan, const std::map<std::string, GcStream>& streams,
                                   const std::map<std::string, catalog::StreamEntry>& now);

}  // namespace strata::tier
