// What `strata scrub` can find wrong with a stream's remote tier, one value
// per finding, each naming the object key and, where it has them, the
// offsets involved (docs/formats/scrub-gc.md, "Scrub").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace strata::tier {

enum class FindingKind : uint8_t {
  // Damage: data a reader needs is gone, wrong or unverifiable.
  missing_root,     // the catalog names a root the bucket does not hold
  corrupt_root,     // the root does not decode or breaks the manifest rules
  missing_object,   // a referenced fragment or group is not in the bucket
  corrupt_group,    // a group does not decode, or is not the group its entry names
  size_mismatch,    // listed size differs from what the fragment's header implies
  crc_mismatch,     // header, index, trailer, object or chunk CRC (or structure) fails
  header_mismatch,  // the fragment's header disagrees with its manifest entry
  gap,              // offsets of [first, next) that no fragment holds
  overlap,          // offsets two fragments both hold
  unparsable_key,   // an object under the stream's prefix whose key is not a tier key
  // Not damage.
  orphan,      // an object nothing references (GC's business once old enough)
  unreadable,  // could not be read now (I/O error): the scrub is incomplete
};

std::string_view finding_name(FindingKind k);
// Everything but orphan and unreadable.
bool is_damage(FindingKind k);

struct ScrubFinding {
  FindingKind kind = FindingKind::orphan;
  std::string key;  // the object (for a gap: the fragment after it, or the root)
  std::optional<uint64_t> first_offset;
  std::optional<uint64_t> next_offset;
  std::optional<int64_t> age_ms;  // orphans: now - last modified, when the store says
  std::optional<uint64_t> size;   // orphans and size mismatches: the listed size
  std::string detail;             // a sentence for a person
  bool operator==(const ScrubFinding&) const = default;
};

}  // namespace strata::tier
