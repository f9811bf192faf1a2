#include "import/osiris_segment.h"

#include <fmt/format.h>

#include "common/crc32.h"
#include "common/endian.h"
#include "log/entries.h"
#include "proto/osiris_chunk.h"

namespace strata::import {

namespace {

constexpr std::string_view kSegmentMagic = "OSIL";
constexpr std::string_view kIndexMagic = "OSII";

Status check_file_header(BytesView h, std::string_view magic, const std::string& path) {
  if (h.size() < kOsirisFileHeaderSize || h.substr(0, 4) != magic) {
    return Error(Errc::corrupt,
                 fmt::format("{}: not an osiris {} file (it does not start with "
                             "\"{}\")",
                             path, magic == kSegmentMagic ? "segment" : "index", magic));
  }
  const uint32_t version = get_be32(u8(h.data() + 4));
  if (version != 1) {
    return Error(
        Errc::corrupt,
        fmt::format("{}: osiris file version {} (this strata reads version 1)", path, version));
  }
  return Status::OK();
}

}  // namespace

OsirisSegment::OsirisSegment(std::unique_ptr<File> f, std::string path, uint64_t size)
    : file_(std::move(f)), path_(std::move(path)), size_(size) {
  window_.reset(*file_, size_);
}

Result<std::unique_ptr<OsirisSegment>> OsirisSegment::open(FileSystem& fs,
                                                           const std::string& path) {
  auto f = fs.open(path, OpenOptions::read_only());
  if (!f.ok()) return std::move(f).error().with_context("opening " + path);
  STRATA_ASSIGN_OR_RETURN(uint64_t size, (*f)->size());
  std::unique_ptr<OsirisSegment> seg(new OsirisSegment(std::move(f).value(), path, size));
  auto head = seg->window_.read_up_to(0, kOsirisFileHeaderSize);
  if (!head.ok()) return std::move(head).error().with_context(path);
  STRATA_TRY(check_file_header(*head, kSegmentMagic, path));
  return seg;
}

Error OsirisSegment::damage(uint64_t position, const std::string& what) const {
  return Error(Errc::corrupt, fmt::format("{} at byte {}: {}", path_, position, what));
}

Result<std::optional<OsirisChunk>> OsirisSegment::next() {
  if (pos_ == size_) return std::optional<OsirisChunk>();
  const uint64_t at = pos_;
  if (size_ - at < kOsirisChunkHeaderSize) {
    return damage(
        at, fmt::format("{} bytes left, less than a chunk header (a torn write)", size_ - at));
  }
  STRATA_ASSIGN_OR_RETURN(BytesView h, window_.read(at, kOsirisChunkHeaderSize));
  OsirisChunk c;
  // The layout the stream protocol delivers (proto/osiris_chunk.h). Its
  // first reserved byte is RabbitMQ 3.13's filter length (zero before): the
  // filter sits between header and data; strata builds its own and skips it.
  auto hdr = proto::decode_osiris_header(h);
  if (!hdr.ok()) return damage(at, "no chunk starts here: " + hdr.error().message);
  if (hdr->chunk_type > uint8_t(OsirisChunkType::tracking_snapshot)) {
    return damage(at, fmt::format("unknown chunk type {}", hdr->chunk_type));
  }
  c.type = OsirisChunkType(hdr->chunk_type);
  c.num_entries = hdr->num_entries;
  c.num_records = hdr->num_records;
  c.timestamp_ms = hdr->timestamp_ms;
  c.epoch = hdr->epoch;
  c.chunk_id = hdr->chunk_id;
  c.crc = hdr->crc;
  const uint32_t data_len = hdr->data_len;
  const uint32_t trailer_len = hdr->trailer_len;
  const uint8_t filter_len = hdr->bloom_size;
  c.position = at;
  c.size = kOsirisChunkHeaderSize + filter_len + uint64_t(data_len) + trailer_len;
  if (c.size > kMaxOsirisChunkBytes) {
    return damage(at, fmt::format("the header claims a chunk of {} bytes (at most {}): damaged",
                                  c.size, kMaxOsirisChunkBytes));
  }
  if (c.size > size_ - at) {
    return damage(at, fmt::format("chunk {} needs {} bytes but the file ends {} bytes later (a "
                                  "torn write: start RabbitMQ once so that it recovers the "
                                  "segment, stop it, and import again)",
                                  c.chunk_id, c.size, size_ - at));
  }
  if (c.num_entries == 0 || c.num_records == 0) {
    return damage(at, fmt::format("chunk {} claims {} entries and {} records", c.chunk_id,
                                  c.num_entries, c.num_records));
  }
  STRATA_ASSIGN_OR_RETURN(BytesView whole, window_.read(at, c.size));
  c.data = whole.substr(kOsirisChunkHeaderSize + filter_len, data_len);
  c.trailer = whole.substr(kOsirisChunkHeaderSize + filter_len + data_len, trailer_len);
  const uint32_t crc = crc32_zlib(c.data);
  if (crc != c.crc) {
    return damage(at, fmt::format("chunk {}: the data's CRC32 is {:08x}, the header says {:08x} "
                                  "(the data is damaged)",
                                  c.chunk_id, crc, c.crc));
  }
  log::EntryCounts n;
  if (auto problem = log::count_entries(c.data, &n)) {
    return damage(at + kOsirisChunkHeaderSize + filter_len + problem->position,
                  fmt::format("chunk {}: {}", c.chunk_id, problem->reason));
  }
  const bool tracking = c.type != OsirisChunkType::user;
  if (n.entries != c.num_entries || n.records != c.num_records ||
      (tracking && (n.entries != 1 || !log::only_simple_entries(c.data)))) {
    return damage(at,
                  fmt::format("chunk {} holds {} entries / {} records, its header says {} / {}{}",
                              c.chunk_id, n.entries, n.records, c.num_entries, c.num_records,
                              tracking ? " (a tracking chunk holds one simple entry)" : ""));
  }
  pos_ = at + c.size;
  return std::optional<OsirisChunk>(c);
}

Result<std::vector<OsirisIndexRecord>> read_osiris_index(FileSystem& fs, const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(Bytes body, read_file(fs, path));
  STRATA_TRY(check_file_header(body, kIndexMagic, path));
  std::vector<OsirisIndexRecord> out;
  for (size_t at = kOsirisFileHeaderSize; at + kOsirisIndexRecordSize <= body.size();
       at += kOsirisIndexRecordSize) {
    const uint8_t* p = u8(body.data() + at);
    OsirisIndexRecord r;
    r.chunk_id = get_be64(p);
    r.timestamp_ms = int64_t(get_be64(p + 8));
    r.epoch = get_be64(p + 16);
    r.position = get_be32(p + 24);
    r.type = p[28];
    // Osiris pre-allocates index files and leaves zeroed records past the
    // last chunk; a record at position 0 is one of those.
    if (r.position == 0) break;
    out.push_back(r);
  }
  return out;
}

}  // namespace strata::import
