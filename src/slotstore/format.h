// The slotstore file format: layout, header, record copies, string table
// entries, WAL half headers and WAL entries. Pure encode/decode functions,
// no I/O. docs/formats/slotstore.md describes the same
// bytes in prose.
//
//   [0, header_size)            header: magic, version, capacity, schema, CRC
//   [strings_off, +strings*S)   string table: one entry slot per interned id
//   [records_off, +2*slots*R)   record copy 0 of every slot, then copy 1 of every slot
//   [wal_off, +2*half)          WAL half 0, WAL half 1
//
// Every region starts on a 4096-byte boundary. All integers big-endian; all
// checksums CRC32C.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "slotstore/schema.h"

namespace strata::slotstore::format {

inline constexpr uint32_t kMagic = 0x53534C54;  // "SSLT"
inline constexpr uint16_t kVersion = 1;
inline constexpr uint32_t kHalfMagic = 0x53535748;  // "SSWH"
inline constexpr uint64_t kAlign = 4096;
inline constexpr size_t kHalfHeaderSize = 32;
inline constexpr size_t kRecordHeaderSize = 18;  // crc, lsn, gen, state, key_len
inline constexpr size_t kStringHeaderSize = 7;   // crc, flag, len
inline constexpr uint8_t kStringUsed = 0xA5;
inline constexpr size_t kEntryHeaderSize = 17;  // chain crc, size, type, lsn
inline constexpr uint32_t kMaxSlots = 1u << 24;
inline constexpr uint32_t kMaxStrings = 1u << 24;

enum class EntryType : uint8_t { marker = 1, put = 2, erase = 3, intern = 4, durable = 5 };
inline constexpr uint8_t kPutAssign = 1;  // put flag: the entry assigns the slot to a key
// A `durable` entry: header, u64 durable lsn, u32 check of its bytes [4, 25).
inline constexpr size_t kDurableEntrySize = kEntryHeaderSize + 12;
// The largest slot generation a writer assigns. A free slot that reached
// it is never assigned again; a generation above it on disk is corrupt.
inline constexpr uint32_t kMaxGeneration = UINT32_MAX - 1;

// Where one field lives in the fixed-size fields area of a record.
struct FieldLayout {
  uint32_t offset = 0;  // of the presence byte
  uint32_t size = 0;    // presence byte + elements
  std::vector<Element> elements;
  std::vector<uint32_t> element_offset;  // relative to `offset`
};

// Element sizes in the fixed (record) encoding.
uint32_t fixed_element_size(const Element& e);  // u64 8, bytes(n) 2+n, interned 4
// Upper bound of an element in the compact (WAL) encoding.
uint32_t compact_element_size(const Element& e);  // u64 8, bytes(n) 2+n, interned 4

struct Layout {
  Schema schema;
  uint32_t slots = 0;
  uint32_t strings = 0;
  uint32_t max_key = 0;
  std::vector<FieldLayout> fields;
  uint32_t fields_size = 0;       // bytes of the fields area of one record
  uint32_t record_size = 0;       // bytes of one record copy
  uint32_t string_max_len = 0;    // longest interned element of the schema
  uint32_t string_slot_size = 0;  // bytes of one string table entry slot
  uint32_t max_op_bytes = 0;      // WAL bytes of the largest put incl. its interns
  uint64_t header_size = 0;
  uint64_t strings_off = 0;
  uint64_t records_off = 0;
  uint64_t wal_off = 0;
  uint64_t half_size = 0;
  uint64_t file_size = 0;

  // Copy 0 of every slot, then copy 1 of every slot: compaction usually
  // flips runs of neighbouring slots to the same copy and writes them with
  // one call.
  uint64_t record_offset(uint32_t slot, int copy) const {
    return records_off + (uint64_t(copy) * slots + slot) * record_size;
  }
  uint64_t string_offset(uint32_t id) const {
    return strings_off + uint64_t(id) * string_slot_size;
  }
  uint64_t half_offset(int half) const { return wal_off + uint64_t(half) * half_size; }
};

// Computes the layout for a schema and capacity; invalid_argument if the
// capacity is out of range or the WAL is too small for the schema's
// largest entry.
Result<Layout> make_layout(const Schema& schema, uint32_t slots, uint32_t strings,
                           uint64_t wal_bytes);

// ---- header ----
Bytes encode_header(const Layout& layout);
// Reads the header from the first bytes of a file (at least the first 64;
// `need_more` tells how many bytes the full header has when `in` is short).
// Errors: corrupt (magic, CRC, inconsistent layout), unsupported_version.
Result<Layout> decode_header(BytesView in, const std::string& path, uint64_t* need_more);

// ---- record copies ----
// One slot's state as stored in a record copy.
struct RecordImage {
  uint64_t lsn = 0;  // every WAL entry for this slot with lsn <= this is included
  uint32_t gen = 0;  // generation: bumped each time the slot is assigned to a key
  bool live = false;
  Bytes key;
  Bytes fields;  // fields area, layout.fields_size bytes
};
// Writes layout.record_size bytes at out.
void encode_record(const Layout& layout, uint32_t slot, int copy, const RecordImage& rec,
                   char* out);
// False if the copy fails its CRC or is malformed (a torn or never-finished write).
bool decode_record(const Layout& layout, uint32_t slot, int copy, const char* in, RecordImage* out);
// The copy recovery and compaction treat as current: the valid one with the
// higher lsn (copy 0 on a tie); -1 if neither is valid.
int pick_current(bool valid0, uint64_t lsn0, bool valid1, uint64_t lsn1);

// ---- string table ----
void encode_string(const Layout& layout, uint32_t id, BytesView s, char* out);
enum class StringSlot { empty, valid, damaged };
StringSlot decode_string(const Layout& layout, uint32_t id, const char* in, Bytes* out);

// ---- WAL ----
struct HalfHeader {
  uint64_t seq = 0;         // 1 for the first half ever started, +1 per switch
  uint64_t first_lsn = 0;   // entries of this half have lsn >= this
  uint32_t chain_seed = 0;  // chain CRC of the entry before this half's first one
};
void encode_half_header(int half, const HalfHeader& h, char* out);  // kHalfHeaderSize bytes
bool decode_half_header(int half, const char* in, HalfHeader* out);

// A decoded WAL entry; views point into the buffer it was decoded from.
struct Entry {
  EntryType type = EntryType::marker;
  uint64_t lsn = 0;
  uint32_t chain = 0;        // this entry's chain CRC
  uint32_t size = 0;         // bytes including the header
  uint64_t nonce = 0;        // marker
  uint64_t durable_lsn = 0;  // durable: every entry up to this lsn was fsynced before this one
  uint32_t slot = 0;         // put, erase
  uint32_t gen = 0;          // put, erase
  bool assign = false;
  BytesView key;  // put with assign
  uint8_t n_updates = 0;
  BytesView updates;       // put: n_updates compact updates
  uint32_t string_id = 0;  // intern
  BytesView str;           // intern
};

// Outcome of decoding the bytes at a WAL position.
enum class EntryStatus { ok, end };
// Decodes the entry at in[0..) whose chain must continue from `prev_chain`.
// `end` if the bytes are not a valid continuation (zeros, torn, stale, CRC or
// size mismatch, truncated): the chain stops there. A chain-valid entry with
// a malformed body is Errc::corrupt.
Result<EntryStatus> decode_entry(const Layout& layout, BytesView in, uint32_t prev_chain,
                                 Entry* out);
// Why the bytes at in[0..) do not continue the chain from `prev_chain`, for
// messages; nullopt if their framing does continue it.
std::optional<std::string> why_chain_ends(BytesView in, uint32_t prev_chain);

// The body of a `durable` entry of lsn `lsn` recording that every entry up
// to `durable_lsn` had been fsynced when it was written.
Bytes durable_body(uint64_t lsn, uint64_t durable_lsn);
// A `durable` entry recognised on its own, without the chain before it
// (its check covers its size, type, lsn and durable lsn).
struct DurableClaim {
  uint64_t lsn = 0;
  uint64_t durable_lsn = 0;
};
// True if in[0..) holds a `durable` entry whose own check matches.
bool decode_durable_claim(BytesView in, DurableClaim* out);
// Bytes [4, 9) of every `durable` entry (its size and type), to search for.
BytesView durable_entry_signature();

// Appends an entry to `out`: header, then `body`; returns the new chain CRC.
uint32_t append_entry(Bytes* out, EntryType type, uint64_t lsn, BytesView body,
                      uint32_t prev_chain);

// Applies a put's compact updates to a fields area (fixed encoding).
// Errc::corrupt if an update names an unknown field or does not fit.
Status apply_updates(const Layout& layout, const Entry& put, char* fields);

// A key for messages: quoted if printable ASCII, else hex.
std::string describe_key(BytesView key);

// The interned string ids a fields area refers to.
void referenced_strings(const Layout& layout, const char* fields, std::vector<uint32_t>* out);

}  // namespace strata::slotstore::format
