// Writer sequences: the highest publishing id committed per writer
// (publisher) reference, stored with the data so deduplication survives a
// restart (docs/formats/writer-sequences.md).
//
// A chunk whose batches name writers carries in its trailer the highest
// sequence of each of them in that chunk (a delta). The first chunk of every
// segment carries instead a snapshot: every writer's sequence as of the end
// of that chunk. So the newest segment that holds a chunk rebuilds the whole
// map (its first chunk's snapshot, then its later chunks' deltas), and
// retention, which deletes only older segments, never loses it. Trailer
// bytes are covered by the chunk's data_crc.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/bytes.h"
#include "common/fs.h"
#include "common/result.h"

namespace strata::log {

constexpr uint8_t kWriterTrailerFormat = 1;
constexpr uint8_t kWriterTrailerSnapshot = 0x01;  // flags bit 0
constexpr size_t kMaxWriterRefSize = 255;

// Writer reference -> highest committed sequence.
using WriterSequences = std::map<std::string, uint64_t, std::less<>>;

struct WriterTrailer {
  bool snapshot = false;
  // Sorted by reference, each reference once, 1..255 bytes each.
  std::vector<std::pair<std::string, uint64_t>> writers;

  bool operator==(const WriterTrailer&) const = default;
};

// Appends the trailer's bytes to *out.
void encode_writer_trailer(const WriterTrailer& t, Bytes* out);
// Errors (corrupt) name `where` and the trailer byte at fault.
Result<WriterTrailer> decode_writer_trailer(BytesView in, const std::string& where);

// A delta raises each writer to at least its sequence; a snapshot replaces
// the map.
void apply_writer_trailer(const WriterTrailer& t, WriterSequences* map);

// The map as of the end of a segment: reads every chunk of `f` (a segment
// file whose valid chunks end at `valid_end`), verifying each chunk's CRC.
// nullopt if the segment holds no chunk (then the map comes from the
// segment before it). Errors name `path` and the chunk position.
Result<std::optional<WriterSequences>> load_writer_sequences(File& f, const std::string& path,
                                                             uint64_t valid_end);

}  // namespace strata::log
