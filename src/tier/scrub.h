// Scrub, the pure core: what a stream's persisted manifest references
// against what the bucket lists and what reading the fragments showed,
// turned into findings (scrub_finding.h). No I/O, no clock: the shell
// (scrub_run.h) reads, checks and passes the time in.
//
// Rules, per referenced fragment (manifest range [first, next), data size
// and epoch from its entry):
//  - not listed (or gone when read)      -> missing_object
//  - could not be read (I/O error)       -> unreadable (the scrub is incomplete)
//  - header does not decode              -> crc_mismatch
//  - header range, data size or epoch differ from the entry -> header_mismatch
//  - listed size != header size + index + trailer (fragment_object_size of
//    the header's data size and chunk count)           -> size_mismatch
//  - index / trailer or whole object does not verify   -> crc_mismatch
// Then the fragments' actual ranges (from their headers, or the manifest's
// where no header could be read) must tile [first, next) of the root: a
// hole is a gap, offsets held twice an overlap. Every listed key of the
// stream must parse (unparsable_key); a parsed key nothing references is an
// orphan, reported with its age but not damage.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "objstore/object_store.h"
#include "tier/fragment_object.h"
#include "tier/scrub_tree.h"

namespace strata::tier {

struct RootRead {
  ReadState state = ReadState::ok;  // only meaningful when the catalog names a root
  Manifest manifest;                // when ok (validated)
  std::string error;
};

// What the shell learned reading one referenced fragment.
struct FragmentCheck {
  bool read = false;       // the shell tried (false when not listed)
  bool vanished = false;   // listed, but not found when read: missing
  std::string read_error;  // an I/O error: nothing below is known
  std::optional<FragmentHeader> header;
  std::string header_error;   // the header did not decode
  bool tail_checked = false;  // index + trailer read by range and decoded
  std::string tail_error;
  bool whole_checked = false;  // the whole object read and decoded (every CRC)
  std::string whole_error;
  bool operator==(const FragmentCheck&) const = default;
};

struct ScrubInput {
  std::string stream;
  std::optional<catalog::StreamEntry> entry;  // nullopt: not in the catalog
  RootRead root;                              // when entry names a root
  TreeWalk walk;                              // complete() when the root is ok
  std::vector<objstore::ObjectInfo> listing;  // the stream's prefix
  std::vector<FragmentCheck> checks;          // one per walk.leaves entry (same order)
  int64_t now_ms = 0;
};

struct ScrubReport {
  std::string stream;
  bool in_catalog = false;
  uint64_t epoch = 0;
  uint64_t revision = 0;
  std::string root_key;
  uint64_t first_offset = 0;
  uint64_t next_offset = 0;
  Manifest manifest;                    // the root's, when it was read
  std::vector<std::string> referenced;  // root, groups and fragments, sorted
  uint64_t fragments = 0;               // referenced
  uint64_t groups = 0;                  // referenced
  uint64_t fragment_bytes = 0;          // chunk bytes referenced
  uint64_t objects_listed = 0;
  uint64_t headers_checked = 0;     // fragments whose header (and index) were read
  uint64_t fragments_verified = 0;  // fragments read whole and every CRC verified
  std::vector<ScrubFinding> findings;

  bool damaged() const;
  // Something could not be read: a clean report does not prove much.
  bool incomplete() const;
  size_t count(FindingKind k) const;
};

ScrubReport scrub_report(const ScrubInput& in, const ObjectKeys& keys);

}  // namespace strata::tier
