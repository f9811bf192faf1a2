#include "log/log_files.h"

#include <fmt/format.h>

#include "common/assert.h"
#include "common/crc32c.h"
#include "common/endian.h"
#include "common/fs.h"

namespace strata::log {

namespace {

constexpr size_t kIndexHeaderCrcPos = 20;
constexpr size_t kIndexCrcPos = 44;
constexpr size_t kOffsetDigits = 20;

const char* suffix_of(LogFileKind k) {
  return k == LogFileKind::segment ? ".segment" : ".index";
}
uint32_t magic_of(LogFileKind k) {
  return k == LogFileKind::segment ? kSegmentMagic : kIndexMagic;
}
const char* kind_name(LogFileKind k) {
  return k == LogFileKind::segment ? "segment" : "index";
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::string segment_file_name(uint64_t first_offset) {
  return fmt::format("{:020}.segment", first_offset);
}

std::string index_file_name(uint64_t first_offset) {
  return fmt::format("{:020}.index", first_offset);
}

Result<std::optional<LogFileName>> parse_log_file_name(const std::string& name) {
  LogFileKind kind;
  if (ends_with(name, ".segment")) {
    kind = LogFileKind::segment;
  } else if (ends_with(name, ".index")) {
    kind = LogFileKind::index;
  } else {
    return std::optional<LogFileName>();
  }
  std::string digits = name.substr(0, name.size() - std::string_view(suffix_of(kind)).size());
  bool ok = digits.size() == kOffsetDigits;
  for (char c : digits) ok = ok && c >= '0' && c <= '9';
  // 20 digits can exceed UINT64_MAX (18446744073709551615).
  if (ok && digits > "18446744073709551615") ok = false;
  if (!ok) {
    return Error(Errc::corrupt,
                 fmt::format("unexpected {} file name '{}' (want <20-digit offset>{})",
                             kind_name(kind), name, suffix_of(kind)));
  }
  return std::optional<LogFileName>(LogFileName{kind, std::stoull(digits)});
}

Bytes encode_file_header(LogFileKind kind, uint64_t first_offset) {
  Bytes out(kFileHeaderSize, '\0');
  uint8_t* p = u8(out.data());
  put_be32(p, magic_of(kind));
  put_be32(p + 4, kLogFileVersion);
  put_be64(p + 8, first_offset);
  put_be32(p + 16, 0);
  put_be32(p + kIndexHeaderCrcPos, crc32c::value(p, kIndexHeaderCrcPos));
  return out;
}

Result<uint64_t> decode_file_header(LogFileKind kind, BytesView in, const std::string& path) {
  if (in.size() < kFileHeaderSize) {
    return Error(Errc::corrupt, fmt::format("{}: {} file header truncated ({} of {} bytes)", path,
                                            kind_name(kind), in.size(), kFileHeaderSize));
  }
  const uint8_t* p = u8(in.data());
  if (get_be32(p) != magic_of(kind)) {
    return Error(Errc::corrupt,
                 fmt::format("{}: wrong magic {:#010x} at position 0 (want {:#010x}, a "
                             "strata {} file)",
                             path, get_be32(p), magic_of(kind), kind_name(kind)));
  }
  uint32_t want = get_be32(p + kIndexHeaderCrcPos);
  uint32_t got = crc32c::value(p, kIndexHeaderCrcPos);
  if (want != got) {
    return Error(Errc::corrupt,
                 fmt::format("{}: {} file header CRC mismatch (stored {:#010x}, computed {:#010x})",
                             path, kind_name(kind), want, got));
  }
  if (get_be32(p + 4) != kLogFileVersion) {
    return Error(Errc::unsupported_version,
                 fmt::format("{}: {} file version {} (this build reads {})", path, kind_name(kind),
                             get_be32(p + 4), kLogFileVersion));
  }
  if (get_be32(p + 16) != 0) {
    return Error(Errc::corrupt, fmt::format("{}: reserved header bytes are not zero", path));
  }
  return get_be64(p + 8);
}

IndexRecord index_record_for(const ChunkHeader& h, uint64_t position) {
  STRATA_ASSERT(h.total_size() <= kMaxChunkSize, "chunk too large for an index record");
  IndexRecord r;
  r.first_offset = h.first_offset;
  r.timestamp_ms = h.timestamp_ms;
  r.epoch = h.epoch;
  r.position = position;
  r.num_records = h.num_records;
  r.chunk_size = uint32_t(h.total_size());
  r.type = h.type;
  return r;
}

void encode_index_record(const IndexRecord& r, uint8_t* p) {
  put_be64(p, r.first_offset);
  put_be64(p + 8, uint64_t(r.timestamp_ms));
  put_be64(p + 16, r.epoch);
  put_be64(p + 24, r.position);
  put_be32(p + 32, r.num_records);
  put_be32(p + 36, r.chunk_size);
  p[40] = uint8_t(r.type);
  p[41] = p[42] = p[43] = 0;
  put_be32(p + kIndexCrcPos, crc32c::value(p, kIndexCrcPos));
}

Result<IndexRecord> decode_index_record(BytesView in, const std::string& where) {
  if (in.size() < kIndexRecordSize) {
    return Error(Errc::corrupt, fmt::format("{}: index record truncated ({} of {} bytes)", where,
                                            in.size(), kIndexRecordSize));
  }
  const uint8_t* p = u8(in.data());
  uint32_t want = get_be32(p + kIndexCrcPos);
  uint32_t got = crc32c::value(p, kIndexCrcPos);
  if (want != got) {
    return Error(Errc::corrupt,
                 fmt::format("{}: index record CRC mismatch (stored {:#010x}, computed "
                             "{:#010x})",
                             where, want, got));
  }
  if (p[40] > uint8_t(ChunkType::tracking_snapshot) || p[41] || p[42] || p[43]) {
    return Error(Errc::corrupt,
                 fmt::format("{}: index record has a bad type or reserved bytes", where));
  }
  IndexRecord r;
  r.first_offset = get_be64(p);
  r.timestamp_ms = int64_t(get_be64(p + 8));
  r.epoch = get_be64(p + 16);
  r.position = get_be64(p + 24);
  r.num_records = get_be32(p + 32);
  r.chunk_size = get_be32(p + 36);
  r.type = ChunkType(p[40]);
  if (r.num_records == 0 || r.chunk_size < kChunkHeaderSize) {
    return Error(Errc::corrupt, fmt::format("{}: index record with {} records / {} bytes", where,
                                            r.num_records, r.chunk_size));
  }
  return r;
}

Result<FileLock> lock_stream(const std::string& dir) {
  return FileLock::acquire(path_join(dir, "LOCK"), fmt::format("stream {}", dir));
}

}  // namespace strata::log
