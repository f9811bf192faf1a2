// The entries of a chunk's data section, as osiris frames them
// (docs/formats/chunk.md, "Record entries"):
//   simple     u32 `0:1 len:31`, then len bytes: one record;
//   sub-batch  `1:1 comp:3 rsvd:4` u8, nrec u16, uncompressed_len u32,
//              len u32, then len bytes: nrec records, which a publisher
//              batched and possibly compressed. Uncompressed (comp 0), the
//              len bytes are nrec simple entries.
// A chunk's num_entries counts entries, num_records the offsets they occupy
// (1 per simple entry, nrec per sub-batch). The stream protocol stores and
// delivers entries as they came off the wire; only readers that want single
// records look inside sub-batches.
//
// The framing of an entry is proto's (proto/osiris_chunk.h,
// frame_osiris_entry: one rule for entries off the wire and in a chunk,
// including that a sub-batch of 0 records is refused); on top of it this
// file checks what a chunk's entries hold (an uncompressed sub-batch is
// exactly nrec simple entries) and walks their records.
//
// Pure: bytes in, views out. Problems come back as EntryProblem (position
// and reason) so a caller on a hot path formats the place only on failure.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/endian.h"
#include "common/result.h"
#include "log/chunk.h"
#include "proto/osiris_chunk.h"

namespace strata::log {

constexpr uint32_t kSubBatchFlag = 0x80000000u;
// flags u8 + nrec u16 + uncompressed_len u32 + len u32.
constexpr size_t kSubBatchHeaderSize = proto::kSubBatchEntryHeaderSize;

// Sub-batch compression codes (the stream protocol's): 0 none, 1 gzip,
// 2 snappy, 3 lz4, 4 zstd, 7 user-defined; 5 and 6 unassigned.
constexpr uint8_t kCompressionNone = 0;
std::string compression_name(uint8_t code);

enum class EntryKind : uint8_t { simple, sub_batch };

struct Entry {
  EntryKind kind = EntryKind::simple;
  uint8_t compression = 0;        // sub-batch only
  uint16_t num_records = 1;       // 1 for a simple entry, nrec for a sub-batch
  uint32_t uncompressed_len = 0;  // sub-batch only
  size_t position = 0;            // data byte where the entry header starts
  BytesView body;                 // simple: the record; sub-batch: its len bytes

  size_t header_size() const {
    return kind == EntryKind::simple ? kEntryHeaderSize : kSubBatchHeaderSize;
  }
  size_t size() const { return header_size() + body.size(); }
};

struct EntryProblem {
  Errc code = Errc::corrupt;  // corrupt, or unsupported (a compressed sub-batch's records)
  size_t position = 0;        // data byte of the entry (or inner record) at fault
  std::string reason;

  // "<where>: <reason>"; `where` names the chunk (e.g. "<file> position P").
  Error error(const std::string& where) const;
};

// The entry at data[pos..): its framing within `data` (nrec 0 is corrupt),
// and for an uncompressed sub-batch that its body is exactly nrec simple
// entries.
std::optional<EntryProblem> read_entry(BytesView data, size_t pos, Entry* out);

struct EntryCounts {
  uint64_t entries = 0;
  uint64_t records = 0;
};

// Why the records of a compressed sub-batch are not returned.
std::string compressed_sub_batch_reason(const Entry& e);
// The records of a compressed sub-batch: its body decompressed
// (sub_batch_codec.h) into a new string at the back of `*decoded` (which
// keeps it alive for the caller's views), checked to hold exactly nrec simple
// entries; *body views it. A codec failure is an `unsupported` problem.
std::optional<EntryProblem> decode_sub_batch(const Entry& e, std::deque<std::string>* decoded,
                                             BytesView* body);

// Every entry of a data section, checked as read_entry does; counts them.
std::optional<EntryProblem> count_entries(BytesView data, EntryCounts* counts);

// Whether a data section is simple entries only, framed to its end (a
// hop per entry; the records are not read). False at the first sub-batch
// or at framing that runs past the end.
bool only_simple_entries(BytesView data);

// The header's num_entries and num_records against counted entries.
Status check_counts(const ChunkHeader& h, const EntryCounts& n, const std::string& where);

// The outcome of for_each_record over a chunk's data as an error naming
// `where`: the problem (an unsupported one also naming the sub-batch's first
// offset), else check_counts.
Status records_status(const ChunkHeader& h, const std::optional<EntryProblem>& problem,
                      const EntryCounts& n, const std::string& where);

// The entries of a chunk's data section; also checks the header's
// num_entries and num_records against them. Errors name `where`.
Result<std::vector<Entry>> parse_entries(const ChunkHeader& h, BytesView data,
                                         const std::string& where);

// Calls f(record) for every record of a data section in offset order:
// simple entries, and the inner records of sub-batches. Without `decoded`,
// a compressed sub-batch stops the walk with an `unsupported` problem
// naming the compression; with it, the sub-batch is decompressed into
// `*decoded` (f's views of its records live as long as that string). `*counts` (if given): the
// entries and records walked, so after such a stop the sub-batch's first offset is the chunk's
// first offset + counts->records.
template <class F>
std::optional<EntryProblem> for_each_record(BytesView data, F&& f, EntryCounts* counts = nullptr,
                                            std::deque<std::string>* decoded = nullptr) {
  EntryCounts n;
  size_t pos = 0;
  std::optional<EntryProblem> problem;
  while (pos < data.size()) {
    Entry e;
    if ((problem = read_entry(data, pos, &e))) break;
    if (e.kind == EntryKind::simple) {
      f(e.body);
      n.records += 1;
    } else {
      BytesView body = e.body;
      if (e.compression != kCompressionNone) {
        if (!decoded) {
          problem = EntryProblem{Errc::unsupported, pos, compressed_sub_batch_reason(e)};
          break;
        }
        if ((problem = decode_sub_batch(e, decoded, &body))) break;
      }
      // read_entry (or decode_sub_batch) checked the inner framing.
      size_t in = 0;
      while (in < body.size()) {
        const uint32_t len = get_be32(u8(body.data() + in));
        f(body.substr(in + kEntryHeaderSize, len));
        in += kEntryHeaderSize + len;
      }
      n.records += e.num_records;
    }
    n.entries += 1;
    pos += e.size();
  }
  if (counts) *counts = n;
  return problem;
}

}  // namespace strata::log
