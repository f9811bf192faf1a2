// The objects a persisted manifest references, walked from its root through
// the group objects read so far: what scrub checks and what GC must keep.
//
// Pure: the shell reads group objects and calls walk_tree again until no
// group is left unread (one more level per round; at most a dozen for any
// stream). Like FragmentIterator, the walk skips entries wholly below the
// root's first_offset (retention may have deleted those objects while a
// partly consumed group still lists them); unlike it, a group that cannot be
// used does not stop the walk: it becomes a problem and an unknown leaf
// covering the group's range, and the walk goes on with the rest.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tier/fragment_ref.h"
#include "tier/manifest.h"
#include "tier/object_keys.h"
#include "tier/scrub_finding.h"

namespace strata::tier {

// What the shell found reading one root or group object.
enum class ReadState : uint8_t {
  ok,
  missing,     // not found
  corrupt,     // read, but does not decode / validate
  unreadable,  // an I/O error (transient or not): nothing known
};

struct GroupRead {
  ReadState state = ReadState::ok;
  ManifestGroup group;  // when ok
  std::string error;    // otherwise
};

// One leaf of the walk: a fragment the manifest references, or (known =
// false) the range of a group that could not be used, whose fragments are
// unknown.
struct TreeLeaf {
  FragmentRef ref;  // the fragment (or the unusable group's range)
  std::string key;  // the fragment's key (or the group's)
  bool known = true;
  bool operator==(const TreeLeaf&) const = default;
};

struct TreeGroup {
  std::string key;
  ManifestEntry entry;
  uint64_t end = 0;  // the range the entry names is [entry.offset, end)
  bool operator==(const TreeGroup&) const = default;
};

struct TreeWalk {
  std::vector<TreeLeaf> leaves;        // in offset order
  std::vector<TreeGroup> groups;       // every group entry reached, read or not
  std::vector<std::string> unread;     // reached but absent from `reads`: read them, walk again
  std::vector<ScrubFinding> problems;  // missing / corrupt / unreadable groups
  bool complete() const { return unread.empty(); }
  // Every group used and every leaf known: the referenced set is exact.
  bool exact() const;
};

// Walks `root` (a validated manifest). `reads` holds the groups read so
// far, by key.
TreeWalk walk_tree(const Manifest& root, const ObjectKeys& keys,
                   const std::map<std::string, GroupRead>& reads);

}  // namespace strata::tier
