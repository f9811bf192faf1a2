// Chunk: the unit the log writes, replicates, indexes and uploads. A chunk is
// a fixed 56-byte header followed by `data_len` bytes of record entries and
// `trailer_len` bytes of trailer. Byte layout in docs/formats/chunk.md.
//
// The header carries its own CRC32C (so a torn header is never trusted), a
// CRC of data+trailer (so torn or rotten record bytes are detected) and,
// from version 2, the zlib CRC32 of the data section: the CRC the RabbitMQ
// stream protocol sends with a chunk, computed once when the chunk is
// written instead of once per delivery. Version 3 takes the body CRC in the
// same polynomial (the wire CRC continued over the trailer), so writing and
// verifying a chunk is one checksum pass, not two.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"

namespace strata::log {

constexpr uint32_t kChunkMagic = 0x5343484B;  // "SCHK"
// Version written. Versions 1 (offset 48 reserved, no wire_crc) and 2
// (data_crc in CRC32C) still decode.
constexpr uint8_t kChunkVersion = 3;
constexpr uint8_t kChunkVersionCrc32c = 2;
constexpr uint8_t kChunkVersionNoWireCrc = 1;
constexpr size_t kChunkHeaderSize = 56;
// Entry header: top bit 0 = simple entry, low 31 bits = record length; top
// bit 1 = an osiris sub-batch (log/entries.h).
constexpr size_t kEntryHeaderSize = 4;
constexpr uint32_t kMaxRecordSize = 0x7FFFFFFF;

enum class ChunkType : uint8_t { user = 0, tracking_delta = 1, tracking_snapshot = 2 };

struct ChunkHeader {
  ChunkType type = ChunkType::user;
  uint16_t num_entries = 0;   // entries in data (one per record for simple entries)
  uint32_t num_records = 0;   // records = offsets this chunk occupies
  int64_t timestamp_ms = 0;   // wall clock when the writer built the chunk
  uint64_t epoch = 0;         // writer epoch
  uint64_t first_offset = 0;  // offset of the first record ("chunk id")
  // CRC of data followed by trailer: zlib CRC32 (common/crc32.h) from
  // version 3, CRC32C (common/crc32c.h) before.
  uint32_t data_crc = 0;
  uint32_t data_len = 0;
  uint32_t trailer_len = 0;
  // CRC32 (zlib) of the data section only, not the trailer: the osiris
  // chunk's crc field. Version 1 chunks have none (wire_crc 0).
  uint32_t wire_crc = 0;
  uint8_t version = kChunkVersion;

  // Whether wire_crc holds the wire CRC (version 2 on).
  bool wire_crc_known() const { return version >= kChunkVersionCrc32c; }
  uint64_t next_offset() const { return first_offset + num_records; }
  uint64_t total_size() const { return kChunkHeaderSize + uint64_t(data_len) + trailer_len; }
  bool operator==(const ChunkHeader&) const = default;
};

// Writes exactly kChunkHeaderSize bytes (including the header CRC) in
// h.version (1..3), so a decoded header encodes back to the same bytes. It
// writes fields as given: the builders below compute the CRCs.
void encode_chunk_header(const ChunkHeader& h, uint8_t* out);

// Decodes and validates magic, version, type, reserved bytes and header CRC.
// `where` names the place in errors (e.g. "<file> position 4096").
Result<ChunkHeader> decode_chunk_header(BytesView in, const std::string& where);

// Checks data_crc against the bytes that follow the header (data+trailer);
// for a version 3 chunk, in the same single pass, wire_crc against the data
// section.
Status verify_chunk_body(const ChunkHeader& h, BytesView body, const std::string& where);

// Continues `crc` (0 at the start of a body) over the next `n` body bytes
// in the polynomial of h.data_crc: for checking a body that arrives in
// pieces (tier/fragment_object.h). Over the whole body it equals data_crc.
uint32_t extend_body_crc(const ChunkHeader& h, uint32_t crc, const void* data, size_t n);

// Checks wire_crc against the data section (the first data_len bytes of
// `body`, the bytes that follow the header). A version 1 chunk has nothing
// to check: OK. For version 2, readers rely on data_crc (CRC32C) and this
// is for audits and scrubs that must know the stored wire CRC is the one a
// client will compute; verify_chunk_body checks it for version 3.
Status verify_wire_crc(const ChunkHeader& h, BytesView body, const std::string& where);

// The wire CRC of a chunk: the stored one, or for a version 1 chunk the one
// computed from `data` (its data section).
uint32_t chunk_wire_crc(const ChunkHeader& h, BytesView data);

// Builds a whole chunk (header + entries + trailer) holding `records`.
// Requires 1..65535 records, each at most kMaxRecordSize bytes.
Bytes build_chunk(const std::vector<BytesView>& records, uint64_t first_offset, uint64_t epoch,
                  int64_t timestamp_ms, ChunkType type = ChunkType::user, BytesView trailer = {});

// Builds a whole chunk of osiris entries taken verbatim (not validated;
// see log/entries.h): `num_entries` (1..65535) entries, `num_records` offsets.
Bytes build_chunk_of_entries(BytesView entries, uint32_t num_entries, uint32_t num_records,
                             uint64_t first_offset, uint64_t epoch, int64_t timestamp_ms,
                             ChunkType type = ChunkType::user, BytesView trailer = {});

// Splits a chunk's data section into its records (views into `data`, or
// into `*decoded`): simple entries and the inner records of sub-batches, in
// offset order (log/entries.h). Validates entry framing against the
// header's counts (corrupt). A compressed sub-batch is decompressed into
// `*decoded` when given; without it, or when its codec fails:
// Errc::unsupported naming the compression and first offset (read it whole
// with parse_entries).
Result<std::vector<BytesView>> parse_records(const ChunkHeader& h, BytesView data,
                                             const std::string& where,
                                             std::deque<std::string>* decoded = nullptr);

// Builds chunks into a caller-owned buffer, so a writer that reuses the
// buffer allocates nothing per chunk. Usage: begin(); add() records and/or
// add_entries() (1..65535 entries in all); finish() encodes the header in
// place and returns it. The chunk occupies (*out)[start .. out->size())
// where start = out->size() at begin().
class ChunkBuilder {
 public:
  explicit ChunkBuilder(Bytes* out) : out_(out) {}

  void begin();
  // Requires a begun chunk with fewer than 65535 records and
  // record.size() <= kMaxRecordSize.
  void add(BytesView record);
  // add() for each of `records`, with one buffer resize for all of them.
  void add_records(std::span<const BytesView> records);
  // Appends osiris entries verbatim (simple and/or sub-batches, already
  // validated by the caller, e.g. with count_entries of log/entries.h):
  // `num_entries` entries occupying `num_records` offsets.
  void add_entries(BytesView entries, uint32_t num_entries, uint32_t num_records);
  // Requires at least one record. Appends `trailer`, computes wire_crc
  // (data only) and data_crc (that CRC continued over the trailer).
  ChunkHeader finish(uint64_t first_offset, uint64_t epoch, int64_t timestamp_ms,
                     ChunkType type = ChunkType::user, BytesView trailer = {});

  // Offsets (records) and entries added so far.
  uint32_t records() const { return records_; }
  uint32_t entries() const { return entries_; }
  // Bytes of the data section so far (entry headers included).
  uint64_t data_bytes() const { return out_->size() - start_ - kChunkHeaderSize; }
  // Data bytes a record adds.
  static uint64_t entry_size(BytesView record) { return kEntryHeaderSize + record.size(); }

 private:
  Bytes* out_;
  size_t start_ = 0;
  uint32_t entries_ = 0;
  uint32_t records_ = 0;
  bool open_ = false;
};

}  // namespace strata::log
