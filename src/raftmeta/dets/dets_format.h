// The on-disk layout of an Erlang DETS file, format version 9 (what OTP R8
// and later write; OTP 25 writes its "9(d)" variant). All integers are
// 32-bit big-endian. Facts from OTP's lib/stdlib/src/dets_v9.erl, dets.hrl
// and dets_utils.erl; the full description is docs/formats/meta-dets.md.
#pragma once

#include <cstdint>

namespace strata::raftmeta::dets {

// ---- file header (bytes 0..312) ----
inline constexpr uint32_t kFreelistsPointerPos = 0;  // where the free lists start (clean files)
inline constexpr uint32_t kCookiePos = 4;
inline constexpr uint32_t kClosedProperlyPos = 8;
inline constexpr uint32_t kTypePos = 12;
inline constexpr uint32_t kVersionPos = 16;
inline constexpr uint32_t kMPos = 20;     // linear hashing: current table size
inline constexpr uint32_t kNextPos = 24;  // slots in use
inline constexpr uint32_t kKeyposPos = 28;
inline constexpr uint32_t kNoObjectsPos = 32;
inline constexpr uint32_t kNoKeysPos = 36;
inline constexpr uint32_t kMinNoSlotsPos = 40;
inline constexpr uint32_t kMaxNoSlotsPos = 44;
inline constexpr uint32_t kHashMethodPos = 48;
inline constexpr uint32_t kNPos = 52;  // linear hashing: split pointer
// 28 counters: collections per buddy size 2^4 .. 2^31.
inline constexpr uint32_t kCollectionCountersPos = 56;
inline constexpr uint32_t kCollectionCounters = 28;
// MD5 of bytes [12, 168): type .. counters (not the first three words).
inline constexpr uint32_t kMd5Pos = 168;
inline constexpr uint32_t kMd5DigestFrom = 12;
inline constexpr uint32_t kMd5DigestLen = 156;
// Base of the buddy allocator; 0 means kBase.
inline constexpr uint32_t kFlBasePos = 184;
// 124 reserved bytes follow, then the segment array.
inline constexpr uint32_t kHeaderEnd = 312;

inline constexpr uint32_t kMagic = 0x00ABCDEF;
inline constexpr uint32_t kFormatVersion = 9;
inline constexpr uint32_t kNotClosedProperly = 0;
inline constexpr uint32_t kClosedProperly = 1;
inline constexpr uint32_t kTypeSet = 1;
inline constexpr uint32_t kTypeBag = 2;
inline constexpr uint32_t kTypeDuplicateBag = 3;
inline constexpr uint32_t kHashPhash = 0;
inline constexpr uint32_t kHashPhash2 = 1;

// ---- hash table structure ----
// The segment array: 256 pointers to segment array parts.
inline constexpr uint32_t kSegmentArrayPos = kHeaderEnd;
inline constexpr uint32_t kSegmentArrayParts = 256;
// End of the segment array; the first part lives here, and the 16-byte
// allocation grid that every part, segment and collection sits on starts
// here (DETS's own repair scans from this position in steps of 16).
inline constexpr uint32_t kBase = kSegmentArrayPos + 4 * kSegmentArrayParts;  // 1336
// A part holds 512 pointers to segments; a segment holds 256 slots of
// {collection size, collection position}.
inline constexpr uint32_t kSegmentsPerPart = 512;
inline constexpr uint32_t kSlotsPerSegment = 256;
inline constexpr uint32_t kSlotEntrySize = 8;
inline constexpr uint32_t kPartBytes = 4 * kSegmentsPerPart;                  // 2048
inline constexpr uint32_t kSegmentBytes = kSlotEntrySize * kSlotsPerSegment;  // 2048
inline constexpr uint64_t kMaxSlots =
    uint64_t(kSegmentArrayParts) * kSegmentsPerPart * kSlotsPerSegment;  // 32 Mi
inline constexpr uint32_t kGrid = 16;

// ---- object collections ----
// A slot's objects live in one collection: {Size, Status} then, for a set,
// per object {ObjSize = 4 + N, N bytes of term_to_binary(Object)}. Size
// counts the 8-byte header. The collection occupies the buddy block of the
// next power of two >= Size.
inline constexpr uint32_t kCollectionHeaderSize = 8;
inline constexpr uint32_t kActive = 0x12345678;
inline constexpr uint32_t kFree = 0x03ABCDEF;

// ---- free lists (clean files only) and trailer ----
// Chunks {Size, kFree, BuddyIndex, Addresses...} ending with
// {12, kFree, kEndFree}; then the last 4 bytes of the file hold
// file size - FlBase.
inline constexpr uint32_t kEndFree = 12345;
inline constexpr uint32_t kFreeChunkHeaderSize = 12;
inline constexpr uint32_t kMaxBuddyIndex = 32;

}  // namespace strata::raftmeta::dets
