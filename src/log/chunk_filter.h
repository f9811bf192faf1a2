// The filter a chunk keeps of its messages' filter values (the stream
// protocol's Publish v2 filter value, RabbitMQ 3.13 "stream filtering"), so
// that a consumer asking for some values is sent only the chunks that may
// hold them. As osiris does it:
//  - a Bloom filter of `size` bytes (16..255, the stream's
//    stream-filter-size-bytes), each distinct value setting two bits in
//    1..size*8-1; bit 0 says the chunk also holds messages without a value;
//  - a chunk none of whose messages has a value has no filter at all;
//  - a consumer's match: a chunk without a filter matches only when the
//    consumer takes unfiltered messages (match-unfiltered); else a chunk
//    matches when both bits of one of the wanted values are set, or bit 0
//    when unfiltered messages are wanted.
// False positives are the client's to drop: clients filter the messages of
// the chunks they get. The hash is XXH3-128 (libxxhash), not osiris's
// erlang:phash2: the filter is written and read by strata alone (clients
// skip its bytes), so only the semantics must be RabbitMQ's.
//
// The filter is stored in the chunk's trailer, ahead of the writer
// sequences (docs/formats/chunk-filter.md): section byte 2, u8 length, the
// filter bytes.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"

namespace strata::log {

inline constexpr size_t kMinChunkFilterBytes = 16;
inline constexpr size_t kMaxChunkFilterBytes = 255;
inline constexpr size_t kDefaultChunkFilterBytes = 16;
// The trailer section that holds a chunk's filter.
inline constexpr uint8_t kFilterTrailerSection = 2;

// The filter values of the messages of one append: each distinct value,
// and whether some message had none.
struct FilterValues {
  std::set<std::string, std::less<>> values;
  bool unfiltered = false;

  bool empty() const { return values.empty(); }
  void add(std::string_view value);  // an empty value counts as none
  void merge(const FilterValues& other);
};

// The filter of a chunk holding messages with `v`; empty when no message
// has a value. Requires size_bytes in 16..255.
Bytes build_chunk_filter(const FilterValues& v, size_t size_bytes);

// What a consumer asks for: Subscribe's filter.N values and
// match-unfiltered.
class FilterMatcher {
 public:
  FilterMatcher(std::vector<std::string> values, bool match_unfiltered);
  // Whether a chunk with `filter` (empty: the chunk has none) may hold a
  // message the consumer wants.
  bool may_match(BytesView filter) const;
  const std::vector<std::string>& values() const { return values_; }
  bool match_unfiltered() const { return match_unfiltered_; }

 private:
  std::vector<std::string> values_;
  bool match_unfiltered_ = false;
  // The bit pairs of values_, for the filter size last seen (every chunk
  // of a stream has one size, so this is computed once).
  mutable size_t bits_for_ = 0;
  mutable std::vector<std::pair<uint32_t, uint32_t>> bits_;
};

// Appends the trailer section holding `filter` (nothing when it is empty).
void encode_filter_section(BytesView filter, Bytes* out);
// The filter in a chunk's trailer (the bytes after its data): empty when
// the trailer has no filter section. Corrupt when the section runs past
// the trailer or has a size outside 16..255; `where` names the chunk.
Result<BytesView> chunk_filter_of(BytesView trailer, const std::string& where);
// The trailer after its filter section (the writer sequences, if any).
BytesView skip_filter_section(BytesView trailer);

}  // namespace strata::log
