#include "log/segment_scan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "common/endian.h"
#include "common/file_window.h"
#include "log/log_limits.h"

namespace strata::log {

namespace {

// Validates one chunk at `pos`; returns its index record or the reason it is
// not valid (as an Error whose message names path and position).
Result<IndexRecord> check_chunk(FileWindow& w, const std::string& path, uint64_t pos, uint64_t end,
                                uint64_t expected_first, bool exact_offset, bool verify_crc,
                                bool* io_failed) {
  std::string where = fmt::format("{} position {}", path, pos);
  if (end - pos < kChunkHeaderSize) {
    return Error(Errc::corrupt, fmt::format("{}: truncated chunk header ({} of {} bytes before end "
                                            "of file)",
                                            where, end - pos, kChunkHeaderSize));
  }
  auto hv = w.read(pos, kChunkHeaderSize);
  if (!hv.ok()) {
    *io_failed = true;
    return std::move(hv).error();
  }
  STRATA_ASSIGN_OR_RETURN(ChunkHeader h, decode_chunk_header(*hv, where));
  if (exact_offset ? h.first_offset != expected_first : h.first_offset < expected_first) {
    return Error(Errc::corrupt, fmt::format("{}: chunk has first offset {}, expected {}", where,
                                            h.first_offset, expected_first));
  }
  if (h.total_size() > kMaxChunkSize) {
    return Error(Errc::corrupt, fmt::format("{}: chunk of {} bytes exceeds the {} byte chunk limit",
                                            where, h.total_size(), kMaxChunkSize));
  }
  if (h.total_size() > end - pos) {
    return Error(Errc::corrupt, fmt::format("{}: chunk of {} bytes runs past the end of the file "
                                            "({} bytes left)",
                                            where, h.total_size(), end - pos));
  }
  if (verify_crc) {
    auto body = w.read(pos + kChunkHeaderSize, size_t(h.total_size() - kChunkHeaderSize));
    if (!body.ok()) {
      *io_failed = true;
      return std::move(body).error();
    }
    STRATA_TRY(verify_chunk_body(h, *body, where));
  }
  return index_record_for(h, pos);
}

}  // namespace

Result<ScanResult> scan_segment(File& f, const std::string& path, const ScanOptions& o) {
  ScanResult r;
  STRATA_ASSIGN_OR_RETURN(uint64_t size, f.size());
  if (o.limit) size = std::min(size, *o.limit);
  r.file_size = size;
  r.valid_end = o.start_position;
  if (o.start_position > size) {
    r.damage = Error(Errc::corrupt, fmt::format("{}: file is {} bytes, shorter than position {}",
                                                path, size, o.start_position));
    return r;
  }
  FileWindow w(f, size, kScanBlock);
  uint64_t pos = o.start_position;
  uint64_t expected = o.expected_first_offset;
  while (pos < size) {
    bool io_failed = false;
    auto c = check_chunk(w, path, pos, size, expected, true, o.verify_crc, &io_failed);
    if (!c.ok()) {
      if (io_failed) return std::move(c).error();
      r.damage = std::move(c).error();
      break;
    }
    r.chunks.push_back(*c);
    pos = c->end_position();
    expected = c->next_offset();
    r.valid_end = pos;
    if (o.progress) o.progress(pos, size);
  }
  if (!r.damage || !o.look_past_damage) return r;

  // Look for the magic of an intact chunk anywhere after the damage.
  uint8_t magic[4];
  put_be32(magic, kChunkMagic);
  for (uint64_t base = r.valid_end + 1; base + kChunkHeaderSize <= size;) {
    size_t n = size_t(std::min<uint64_t>(kScanBlock, size - base));
    STRATA_ASSIGN_OR_RETURN(BytesView block, w.read(base, n));
    // Copy: check_chunk below may move the window.
    Bytes copy(block);
    for (size_t i = 0; i + 4 <= copy.size(); ++i) {
      if (std::memcmp(copy.data() + i, magic, 4) != 0) continue;
      bool io_failed = false;
      auto c = check_chunk(w, path, base + i, size, expected, false, true, &io_failed);
      if (io_failed) return std::move(c).error();
      if (c.ok()) {
        r.intact_after = *c;
        return r;
      }
    }
    // Overlap by 3 bytes so a magic spanning two blocks is seen.
    base += copy.size() > 3 ? copy.size() - 3 : copy.size();
  }
  return r;
}

}  // namespace strata::log
