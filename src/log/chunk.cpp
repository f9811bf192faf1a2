#include "log/chunk.h"

#include <fmt/format.h>

#include <cstring>

#include "common/assert.h"
#include "common/crc32.h"
#include "common/crc32c.h"
#include "common/endian.h"
#include "log/entries.h"

namespace strata::log {

namespace {
constexpr size_t kHeaderCrcPos = 52;
constexpr size_t kWireCrcPos = 48;
// ChunkBuilder::add_records: from this mean entry size on, per-record
// appends beat a zero-filling resize.
constexpr size_t kMinBytesPerRecordForAppend = 512;
}  // namespace

void encode_chunk_header(const ChunkHeader& h, uint8_t* p) {
  put_be32(p + 0, kChunkMagic);
  STRATA_ASSERT(h.version >= kChunkVersionNoWireCrc && h.version <= kChunkVersion,
                "encode_chunk_header: unknown chunk version");
  p[4] = h.version;
  p[5] = uint8_t(h.type);
  put_be16(p + 6, h.num_entries);
  put_be32(p + 8, h.num_records);
  put_be64(p + 12, uint64_t(h.timestamp_ms));
  put_be64(p + 20, h.epoch);
  put_be64(p + 28, h.first_offset);
  put_be32(p + 36, h.data_crc);
  put_be32(p + 40, h.data_len);
  put_be32(p + 44, h.trailer_len);
  // Version 1 kept these bytes reserved (zero).
  put_be32(p + kWireCrcPos, h.wire_crc_known() ? h.wire_crc : 0);
  put_be32(p + kHeaderCrcPos, crc32c::value(p, kHeaderCrcPos));
}

Result<ChunkHeader> decode_chunk_header(BytesView in, const std::string& where) {
  if (in.size() < kChunkHeaderSize) {
    return Error(Errc::corrupt, fmt::format("{}: chunk header truncated ({} of {} bytes)", where,
                                            in.size(), kChunkHeaderSize));
  }
  const uint8_t* p = u8(in.data());
  if (get_be32(p) != kChunkMagic) {
    return Error(Errc::corrupt, fmt::format("{}: bad chunk magic {:#010x}", where, get_be32(p)));
  }
  uint32_t want = get_be32(p + kHeaderCrcPos);
  uint32_t got = crc32c::value(p, kHeaderCrcPos);
  if (want != got) {
    return Error(Errc::corrupt,
                 fmt::format("{}: chunk header CRC mismatch (stored {:#010x}, computed {:#010x})",
                             where, want, got));
  }
  if (p[4] < kChunkVersionNoWireCrc || p[4] > kChunkVersion) {
    return Error(Errc::unsupported_version,
                 fmt::format("{}: chunk version {} (this build reads {} to {})", where, p[4],
                             kChunkVersionNoWireCrc, kChunkVersion));
  }
  if (p[5] > uint8_t(ChunkType::tracking_snapshot)) {
    return Error(Errc::corrupt, fmt::format("{}: unknown chunk type {}", where, p[5]));
  }
  ChunkHeader h;
  h.version = p[4];
  if (!h.wire_crc_known() && get_be32(p + kWireCrcPos) != 0) {
    return Error(Errc::corrupt,
                 fmt::format("{}: reserved chunk header bytes are not zero (version 1)", where));
  }
  h.wire_crc = get_be32(p + kWireCrcPos);
  h.type = ChunkType(p[5]);
  h.num_entries = get_be16(p + 6);
  h.num_records = get_be32(p + 8);
  h.timestamp_ms = int64_t(get_be64(p + 12));
  h.epoch = get_be64(p + 20);
  h.first_offset = get_be64(p + 28);
  h.data_crc = get_be32(p + 36);
  h.data_len = get_be32(p + 40);
  h.trailer_len = get_be32(p + 44);
  if (h.num_records == 0) {
    return Error(Errc::corrupt, fmt::format("{}: chunk with zero records", where));
  }
  return h;
}

Status verify_chunk_body(const ChunkHeader& h, BytesView body, const std::string& where) {
  uint64_t want_len = uint64_t(h.data_len) + h.trailer_len;
  if (body.size() != want_len) {
    return Error(Errc::corrupt, fmt::format("{}: chunk body is {} bytes, header says {}", where,
                                            body.size(), want_len));
  }
  uint32_t got = 0;
  if (h.version > kChunkVersionCrc32c) {
    // One pass: the data section's CRC is the wire CRC, and continued over
    // the trailer it is data_crc.
    const uint32_t wire = crc32_zlib(body.substr(0, h.data_len));
    if (wire != h.wire_crc) {
      return Error(Errc::corrupt,
                   fmt::format("{}: chunk data CRC mismatch (wire CRC32 stored {:#010x}, "
                               "computed {:#010x})",
                               where, h.wire_crc, wire));
    }
    got = crc32_zlib(body.substr(h.data_len), wire);
  } else {
    got = crc32c::value(body);
  }
  if (got != h.data_crc) {
    return Error(Errc::corrupt,
                 fmt::format("{}: chunk data CRC mismatch (stored {:#010x}, computed {:#010x})",
                             where, h.data_crc, got));
  }
  // Version 2 stored the wire CRC beside a CRC32C of the body: both are
  // claims of the header (delivery sends the stored one to clients that
  // check it), so a verified body matches both. A second pass, paid only by
  // chunks older builds wrote.
  if (h.version == kChunkVersionCrc32c) return verify_wire_crc(h, body, where);
  return Status::OK();
}

uint32_t extend_body_crc(const ChunkHeader& h, uint32_t crc, const void* data, size_t n) {
  return h.version > kChunkVersionCrc32c ? crc32_zlib(data, n, crc) : crc32c::extend(crc, data, n);
}

Status verify_wire_crc(const ChunkHeader& h, BytesView body, const std::string& where) {
  if (!h.wire_crc_known()) return Status::OK();
  if (body.size() < h.data_len) {
    return Error(Errc::corrupt, fmt::format("{}: chunk data is {} bytes, header says {}", where,
                                            body.size(), h.data_len));
  }
  uint32_t got = crc32_zlib(body.substr(0, h.data_len));
  if (got != h.wire_crc) {
    return Error(Errc::corrupt,
                 fmt::format("{}: chunk wire CRC32 mismatch (stored {:#010x}, computed {:#010x})",
                             where, h.wire_crc, got));
  }
  return Status::OK();
}

uint32_t chunk_wire_crc(const ChunkHeader& h, BytesView data) {
  return h.wire_crc_known() ? h.wire_crc : crc32_zlib(data.substr(0, h.data_len));
}

Bytes build_chunk(const std::vector<BytesView>& records, uint64_t first_offset, uint64_t epoch,
                  int64_t timestamp_ms, ChunkType type, BytesView trailer) {
  STRATA_ASSERT(!records.empty() && records.size() <= 0xFFFF, "chunk needs 1..65535 records");
  size_t data_len = 0;
  for (auto r : records) {
    STRATA_ASSERT(r.size() <= kMaxRecordSize, "record too large for a chunk entry");
    data_len += kEntryHeaderSize + r.size();
  }
  STRATA_ASSERT(data_len <= 0xFFFFFFFFu, "chunk data exceeds 4 GiB");
  Bytes out(kChunkHeaderSize, '\0');
  out.reserve(kChunkHeaderSize + data_len + trailer.size());
  for (auto r : records) {
    uint8_t eh[4];
    put_be32(eh, uint32_t(r.size()));
    out.append(reinterpret_cast<char*>(eh), 4);
    out.append(r.data(), r.size());
  }
  ChunkHeader h;
  h.wire_crc = crc32_zlib(BytesView(out).substr(kChunkHeaderSize));
  h.data_crc = crc32_zlib(trailer, h.wire_crc);
  out.append(trailer.data(), trailer.size());
  h.type = type;
  h.num_entries = uint16_t(records.size());
  h.num_records = uint32_t(records.size());
  h.timestamp_ms = timestamp_ms;
  h.epoch = epoch;
  h.first_offset = first_offset;
  h.data_len = uint32_t(data_len);
  h.trailer_len = uint32_t(trailer.size());
  encode_chunk_header(h, u8(out.data()));
  return out;
}

Bytes build_chunk_of_entries(BytesView entries, uint32_t num_entries, uint32_t num_records,
                             uint64_t first_offset, uint64_t epoch, int64_t timestamp_ms,
                             ChunkType type, BytesView trailer) {
  STRATA_ASSERT(num_entries >= 1 && num_records >= 1, "chunk needs entries");
  Bytes out;
  out.reserve(kChunkHeaderSize + entries.size() + trailer.size());
  ChunkBuilder b(&out);
  b.begin();
  b.add_entries(entries, num_entries, num_records);
  b.finish(first_offset, epoch, timestamp_ms, type, trailer);
  return out;
}

Result<std::vector<BytesView>> parse_records(const ChunkHeader& h, BytesView data,
                                             const std::string& where,
                                             std::deque<std::string>* decoded) {
  if (data.size() != h.data_len) {
    return Error(Errc::corrupt, fmt::format("{}: chunk data is {} bytes, header says {}", where,
                                            data.size(), h.data_len));
  }
  std::vector<BytesView> out;
  out.reserve(h.num_records);
  EntryCounts n;
  auto problem = for_each_record(
      data, [&](BytesView r) { out.push_back(r); }, &n, decoded);
  STRATA_TRY(records_status(h, problem, n, where));
  return out;
}

void ChunkBuilder::begin() {
  STRATA_ASSERT(!open_, "ChunkBuilder::begin while a chunk is open");
  start_ = out_->size();
  out_->append(kChunkHeaderSize, '\0');
  entries_ = 0;
  records_ = 0;
  open_ = true;
}

void ChunkBuilder::add(BytesView record) {
  STRATA_ASSERT(open_ && entries_ < 0xFFFF,
                "ChunkBuilder::add outside a chunk or past 65535 entries");
  STRATA_ASSERT(record.size() <= kMaxRecordSize, "record too large for a chunk entry");
  uint8_t eh[kEntryHeaderSize];
  put_be32(eh, uint32_t(record.size()));
  out_->append(reinterpret_cast<const char*>(eh), kEntryHeaderSize);
  out_->append(record.data(), record.size());
  ++entries_;
  ++records_;
}

void ChunkBuilder::add_records(std::span<const BytesView> records) {
  STRATA_ASSERT(open_ && records.size() <= size_t(0xFFFF - entries_),
                "ChunkBuilder::add_records outside a chunk or past 65535 entries");
  size_t bytes = 0;
  for (auto r : records) {
    STRATA_ASSERT(r.size() <= kMaxRecordSize, "record too large for a chunk entry");
    bytes += kEntryHeaderSize + r.size();
  }
  // Small records: one resize and a plain copy loop, because appending
  // header and record one call at a time costs ~8 ns per record in capacity
  // checks (with 100 B records more than the copy itself). Large records:
  // per-record appends, because resize() zero-fills the bytes first (a
  // memset of the whole chunk) and the per-call cost is then negligible
  // (`log_bench encode`, docs/BENCHMARKS.md).
  if (bytes >= kMinBytesPerRecordForAppend * records.size()) {
    for (auto r : records) {
      uint8_t eh[kEntryHeaderSize];
      put_be32(eh, uint32_t(r.size()));
      out_->append(reinterpret_cast<const char*>(eh), kEntryHeaderSize);
      out_->append(r.data(), r.size());
    }
  } else {
    const size_t at = out_->size();
    out_->resize(at + bytes);
    uint8_t* p = u8(out_->data() + at);
    for (auto r : records) {
      put_be32(p, uint32_t(r.size()));
      std::memcpy(p + kEntryHeaderSize, r.data(), r.size());
      p += kEntryHeaderSize + r.size();
    }
  }
  entries_ += uint32_t(records.size());
  records_ += uint32_t(records.size());
}

void ChunkBuilder::add_entries(BytesView entries, uint32_t num_entries, uint32_t num_records) {
  STRATA_ASSERT(open_ && num_entries <= 0xFFFF - entries_,
                "ChunkBuilder::add_entries outside a chunk or past 65535 entries");
  STRATA_ASSERT(num_records <= 0xFFFFFFFFu - records_, "chunk records overflow");
  out_->append(entries.data(), entries.size());
  entries_ += num_entries;
  records_ += num_records;
}

ChunkHeader ChunkBuilder::finish(uint64_t first_offset, uint64_t epoch, int64_t timestamp_ms,
                                 ChunkType type, BytesView trailer) {
  STRATA_ASSERT(open_ && records_ > 0, "ChunkBuilder::finish without records");
  uint64_t data_len = data_bytes();
  STRATA_ASSERT(data_len <= 0xFFFFFFFFu, "chunk data exceeds 4 GiB");
  STRATA_ASSERT(trailer.size() <= 0xFFFFFFFFu - data_len, "chunk trailer too large");
  ChunkHeader h;
  h.type = type;
  h.num_entries = uint16_t(entries_);
  h.num_records = records_;
  h.timestamp_ms = timestamp_ms;
  h.epoch = epoch;
  h.first_offset = first_offset;
  h.data_len = uint32_t(data_len);
  h.trailer_len = uint32_t(trailer.size());
  const char* data = out_->data() + start_ + kChunkHeaderSize;
  // One pass over the data (version 3): the wire CRC, continued over the
  // trailer, is the body CRC.
  h.wire_crc = crc32_zlib(data, data_len);
  h.data_crc = crc32_zlib(trailer, h.wire_crc);
  out_->append(trailer.data(), trailer.size());
  encode_chunk_header(h, u8(out_->data() + start_));
  open_ = false;
  return h;
}

}  // namespace strata::log
