// Byte formats of the manifest: root object, group object, entries, and
// edit batches (what a persist broadcasts to the per-node manifest caches).
// Big-endian; byte by byte in docs/formats/manifest.md. Every object ends with a
// CRC32C of all bytes before it.
//
// Decoders never trust their input: wrong magic, unknown version, a
// truncated or trailing entry, non-monotonic offsets, size overflow, a group
// whose entries are not all of kind level-1, or a CRC mismatch is an
// Errc::corrupt / Errc::unsupported_version error naming the object and the
// position or field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "tier/manifest.h"

namespace strata::tier {

constexpr uint32_t kRootMagic = 0x53544D52;       // "STMR"
constexpr uint32_t kGroupMagic = 0x53544D47;      // "STMG"
constexpr uint32_t kEditBatchMagic = 0x53544D45;  // "STME"
constexpr uint16_t kManifestVersion = 1;
constexpr size_t kManifestHeaderSize = 64;
constexpr size_t kManifestEntrySize = 45;
constexpr size_t kManifestCrcSize = 4;
// The root size the rebalance thresholds guarantee (docs/formats/manifest.md,
// "Why these thresholds").
constexpr size_t kRootSizeBound = 64 * 1024;

void encode_entry(const ManifestEntry& e, uint8_t* out);  // writes kManifestEntrySize bytes
ManifestEntry decode_entry(const uint8_t* in);

// Root object. `writer_epoch` is recorded in the header (GC uses it to spot
// roots of deposed writers).
Bytes encode_root(const Manifest& m, uint64_t writer_epoch);
struct DecodedRoot {
  Manifest manifest;
  uint64_t writer_epoch = 0;
};
Result<DecodedRoot> decode_root(BytesView in, const std::string& where);
inline size_t encoded_root_size(size_t entries) {
  return kManifestHeaderSize + entries * kManifestEntrySize + kManifestCrcSize;
}

Bytes encode_group(const ManifestGroup& g);
Result<ManifestGroup> decode_group(BytesView in, const std::string& where);

// A persist's edits as broadcast to manifest caches: applying `edits` to the
// manifest at `prev_revision` gives the manifest at `revision`.
struct EditBatch {
  uint64_t epoch = 0;
  uint64_t prev_revision = 0;
  uint64_t revision = 0;
  std::vector<ManifestEdit> edits;
  bool operator==(const EditBatch&) const = default;
};
Bytes encode_edit_batch(const EditBatch& b);
Result<EditBatch> decode_edit_batch(BytesView in, const std::string& where);

}  // namespace strata::tier
