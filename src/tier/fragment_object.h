// Fragment object: the bytes of one uploaded fragment. Layout (big-endian,
// byte by byte in docs/formats/fragment.md):
//
//   header   64 B   magic "STFG", version, first/next offset, first/last
//                   timestamp, epoch, data size, chunk count, header CRC32C
//   data     N B    the chunks, byte for byte as they are in the segments
//   index    24 B × chunk count: first offset, timestamp, data position
//   trailer  16 B   chunk count, index CRC32C, magic "STFE", object CRC32C
//
// The object CRC32C covers every byte before it. The header and index have
// their own CRCs so that a reader doing ranged GETs (header only, or the
// index from `fragment_index_position(size)` to the end) can validate what
// it read without fetching the whole object; chunk bytes read by range are
// validated by the chunk's own header and data CRCs.
//
// The encoder streams: header(), then the chunk bytes in any number of
// pieces through add_body() (a shell preads them from the segment spans and
// sends each piece on), then finish() for index + trailer. It never holds
// the chunk data. While the bytes pass through it checks each chunk's header
// against the index and each chunk's data CRC, so a segment that changed
// under the uploader is never uploaded as if it were the committed data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "log/chunk.h"
#include "tier/fragment.h"

namespace strata::tier {

constexpr uint32_t kFragmentMagic = 0x53544647;         // "STFG"
constexpr uint32_t kFragmentTrailerMagic = 0x53544645;  // "STFE"
constexpr uint16_t kFragmentVersion = 1;
constexpr size_t kFragmentHeaderSize = 64;
constexpr size_t kFragmentIndexRecordSize = 24;
constexpr size_t kFragmentTrailerSize = 16;

struct FragmentHeader {
  FragmentMeta meta;   // meta.size = bytes of chunk data
  uint64_t epoch = 0;  // epoch of the uploader that wrote the object
  bool operator==(const FragmentHeader&) const = default;
};

// Where the index starts inside an object whose chunk data is `data_size`
// bytes (the manifest entry's size).
inline uint64_t fragment_index_position(uint64_t data_size) {
  return kFragmentHeaderSize + data_size;
}
// Total object size.
inline uint64_t fragment_object_size(uint64_t data_size, uint32_t chunk_count) {
  return kFragmentHeaderSize + data_size + uint64_t(chunk_count) * kFragmentIndexRecordSize +
         kFragmentTrailerSize;
}

class FragmentEncoder {
 public:
  // Validates the index against the metadata (count, first record at
  // position 0 and meta.first_offset, strictly increasing offsets and
  // positions, every chunk at least a chunk header long).
  static Result<FragmentEncoder> make(const FragmentMeta& meta, std::vector<ChunkIndexRecord> index,
                                      uint64_t epoch, bool verify_chunks = true);

  // The first kFragmentHeaderSize bytes of the object.
  const Bytes& header() const { return header_; }
  // Feeds the next bytes of chunk data. Errors (Errc::corrupt) when the bytes
  // disagree with the index or a chunk CRC, or when more than meta.size bytes
  // arrive; after an error the encoder must be discarded.
  Status add_body(BytesView piece);
  // Index + trailer, once exactly meta.size body bytes were fed.
  Result<Bytes> finish();

  uint64_t object_size() const { return fragment_object_size(meta_.size, meta_.chunk_count); }

 private:
  FragmentEncoder() = default;
  Status verify(BytesView piece);

  FragmentMeta meta_;
  uint64_t epoch_ = 0;
  std::vector<ChunkIndexRecord> index_;
  bool verify_ = true;
  Bytes header_;
  uint32_t crc_ = 0;
  uint64_t fed_ = 0;
  bool failed_ = false;
  // Chunk verification state: chunk being read, bytes of it seen so far, its
  // header bytes and decoded header, CRC of its body so far.
  size_t chunk_ = 0;
  uint64_t in_chunk_ = 0;
  Bytes chunk_header_;
  log::ChunkHeader decoded_header_;
  uint32_t body_crc_ = 0;
  // Version 2 chunks: the zlib CRC of the data section so far, checked
  // against the header's wire CRC as log::verify_chunk_body does.
  uint32_t wire_crc_ = 0;
};

// Whole-object encoder for tests and small objects: body = all chunk bytes.
Result<Bytes> encode_fragment(const FragmentMeta& meta, const std::vector<ChunkIndexRecord>& index,
                              uint64_t epoch, BytesView body);

// Decodes and validates the header (first 64 bytes; more may follow).
// `where` names the object in errors (its key).
Result<FragmentHeader> decode_fragment_header(BytesView in, const std::string& where);

struct DecodedFragment {
  FragmentHeader header;
  BytesView data;  // view into the decoded object
  std::vector<ChunkIndexRecord> index;
};

// Decodes a whole object: header, sizes, index, trailer, object CRC, and (if
// verify_chunks) every chunk header against the index and every chunk CRC.
Result<DecodedFragment> decode_fragment(BytesView object, const std::string& where,
                                        bool verify_chunks = true);

// What a reader knows from the manifest entry before reading the index.
struct FragmentExpectation {
  uint64_t first_offset = 0;
  uint64_t next_offset = 0;
  uint64_t data_size = 0;
};

// Decodes the index from a ranged read of the object's tail: the bytes from
// fragment_index_position(data_size) to the end. Validates the trailer
// (count, magic), the index CRC and the records against `expect`.
Result<std::vector<ChunkIndexRecord>> decode_fragment_index(BytesView tail,
                                                            const FragmentExpectation& expect,
                                                            const std::string& where);

// Index of the chunk holding `offset` (the last record with first_offset <=
// offset); none if offset is below the first chunk.
std::optional<size_t> find_chunk_by_offset(const std::vector<ChunkIndexRecord>& index,
                                           uint64_t offset);
// Index of the first chunk with timestamp >= ts; none if every chunk is
// older. Exact when timestamps are non-decreasing (as the log writes them).
std::optional<size_t> find_chunk_by_timestamp(const std::vector<ChunkIndexRecord>& index,
                                              int64_t ts);

}  // namespace strata::tier
