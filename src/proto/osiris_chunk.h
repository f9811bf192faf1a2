// The osiris chunk as the stream protocol delivers it, and osiris entry
// framing (the unit a Publish frame carries and a chunk's data holds).
// Layout (big-endian), 48 bytes:
//   magic:4 (=5) version:4 (=0) | chunk_type u8 | num_entries u16 |
//   num_records u32 | timestamp i64 (ms) | epoch u64 | chunk_id u64 (first
//   offset) | crc u32 (zlib CRC32 of the data section) | data_len u32 |
//   trailer_len u32 | bloom_size u8 | reserved 3 bytes
// then bloom_size bytes of filter, data_len bytes of entries, trailer_len
// bytes of trailer, as osiris stores a chunk. A Deliver to a consumer
// carries the header and the entries only: osiris skips the filter and the
// trailer of a user chunk (keeping their sizes in the header it sends), so
// a reader finds the entries right after the header. Entries:
//   simple:    0:1 len:31, then len bytes
//   sub-batch: 1:1 compression:3 reserved:4, num_records u16,
//              uncompressed_len u32, len u32, then len bytes
// Inside an uncompressed sub-batch each record is `uint32 len` + bytes.
#pragma once

#include <cstdint>

#include "common/bytes.h"
#include "common/result.h"

namespace strata::proto {

constexpr size_t kOsirisChunkHeaderSize = 48;
constexpr uint8_t kOsirisMagic = 5;
constexpr uint8_t kOsirisVersion = 0;
constexpr size_t kSimpleEntryHeaderSize = 4;
constexpr size_t kSubBatchEntryHeaderSize = 11;
// Largest simple entry body: the length has 31 bits.
constexpr uint32_t kMaxSimpleEntryLen = 0x7fffffffu;

enum class OsirisChunkType : uint8_t { user = 0, tracking_delta = 1, tracking_snapshot = 2 };

struct OsirisChunkHeader {
  uint8_t chunk_type = 0;
  uint16_t num_entries = 0;
  uint32_t num_records = 0;
  int64_t timestamp_ms = 0;
  uint64_t epoch = 0;
  uint64_t chunk_id = 0;  // offset of the chunk's first record
  uint32_t crc = 0;       // zlib CRC32 of the data section
  uint32_t data_len = 0;
  uint32_t trailer_len = 0;
  uint8_t bloom_size = 0;

  // Bytes after the 48-byte header: filter + data + trailer.
  uint64_t body_len() const { return uint64_t(bloom_size) + data_len + trailer_len; }
  bool operator==(const OsirisChunkHeader&) const = default;
};

void encode_osiris_header(const OsirisChunkHeader& h, uint8_t out[kOsirisChunkHeaderSize]);
void encode_osiris_header(const OsirisChunkHeader& h, Bytes* out);
// Fails (Errc::corrupt) on fewer than 48 bytes or a wrong magic/version.
Result<OsirisChunkHeader> decode_osiris_header(BytesView in);

enum class Compression : uint8_t { none = 0, gzip = 1, snappy = 2, lz4 = 3, zstd = 4, user = 7 };

// One entry, parsed in place.
struct OsirisEntry {
  bool sub_batch = false;
  Compression compression = Compression::none;  // sub-batch only
  uint16_t num_records = 1;                     // 1 for a simple entry
  uint32_t uncompressed_len = 0;                // sub-batch only
  uint32_t body_len = 0;                        // the body's length, as its header says
  BytesView body;                               // the entry's payload (after its header)
  BytesView encoded;                            // header + body, as on the wire
};

// What is wrong with an entry's framing.
enum class EntryFraming : uint8_t {
  ok,
  header_truncated,  // fewer bytes than its header (4 simple, 11 sub-batch)
  overrun,           // its body runs past the input
  empty_sub_batch,   // a sub-batch of 0 records
};

// Frames the entry at the front of `in`: the one framing rule of osiris
// entries, for those a Publish frame carries and those a chunk stores
// (log/entries.h builds on it). On a problem *out holds what was read
// (sub_batch says which header, body_len what it declared). Pure and
// allocation-free: it runs for every record read.
//
// A sub-batch of 0 records is refused. osiris and RabbitMQ accept one
// (rabbit_stream_utils:write_messages hands its count to osiris, which adds
// it to the chunk's record count unchecked), and a chunk holding only such
// entries occupies no offset: the next chunk then has the same first
// offset, and offset lookups meet two chunks at one offset. A publisher
// sending one is broken; its frame is refused like any malformed entry.
EntryFraming frame_osiris_entry(BytesView in, OsirisEntry* out);

// Parses the entry at the front of `in`: frame_osiris_entry, its problem
// as Errc::corrupt naming it.
Result<OsirisEntry> parse_osiris_entry(BytesView in);

// Appends a simple entry (len must be <= kMaxSimpleEntryLen).
void append_simple_entry(Bytes* out, BytesView body);
// Appends a sub-batch entry with the given (possibly compressed) body.
void append_sub_batch_entry(Bytes* out, Compression c, uint16_t num_records,
                            uint32_t uncompressed_len, BytesView body);
// Appends one record of an uncompressed sub-batch body (`uint32 len` + bytes).
void append_sub_batch_record(Bytes* out, BytesView record);

// Walks entries back to back (a chunk's data section or a stored batch).
class OsirisEntryReader {
 public:
  explicit OsirisEntryReader(BytesView data) : data_(data) {}
  // False at the end or on error (then error() says what and where).
  bool next(OsirisEntry* e);
  bool failed() const { return failed_; }
  const Error& error() const { return err_; }
  size_t position() const { return pos_; }

 private:
  BytesView data_;
  size_t pos_ = 0;
  bool failed_ = false;
  Error err_;
};

}  // namespace strata::proto
