#include "log/writer_sequences.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/endian.h"
#include "common/file_window.h"
#include "log/chunk.h"
#include "log/chunk_filter.h"
#include "log/log_files.h"
#include "log/log_limits.h"

namespace strata::log {

namespace {
// format u8, flags u8, count u32.
constexpr size_t kTrailerHeaderSize = 6;
}  // namespace

void encode_writer_trailer(const WriterTrailer& t, Bytes* out) {
  const size_t at = out->size();
  out->resize(at + kTrailerHeaderSize);
  uint8_t* p = u8(out->data() + at);
  p[0] = kWriterTrailerFormat;
  p[1] = t.snapshot ? kWriterTrailerSnapshot : 0;
  put_be32(p + 2, uint32_t(t.writers.size()));
  for (const auto& [ref, seq] : t.writers) {
    out->push_back(char(uint8_t(ref.size())));
    out->append(ref);
    uint8_t s[8];
    put_be64(s, seq);
    out->append(reinterpret_cast<const char*>(s), 8);
  }
}

Result<WriterTrailer> decode_writer_trailer(BytesView in, const std::string& where) {
  auto bad = [&](size_t at, const std::string& why) {
    return Error(Errc::corrupt, fmt::format("{}: writer trailer byte {}: {}", where, at, why));
  };
  // The chunk's filter section comes first when there is one; a trailer
  // of only a filter names no writer.
  const size_t skipped = in.size() - skip_filter_section(in).size();
  in = in.substr(skipped);
  if (in.empty()) return WriterTrailer{};
  if (in.size() < kTrailerHeaderSize) return bad(0, "truncated header");
  const uint8_t* p = u8(in.data());
  if (p[0] != kWriterTrailerFormat) return bad(0, fmt::format("unknown format {}", p[0]));
  if (p[1] & ~kWriterTrailerSnapshot) return bad(1, fmt::format("unknown flags {:#04x}", p[1]));
  WriterTrailer t;
  t.snapshot = p[1] & kWriterTrailerSnapshot;
  const uint32_t count = get_be32(p + 2);
  size_t pos = kTrailerHeaderSize;
  for (uint32_t i = 0; i < count; ++i) {
    if (pos >= in.size()) return bad(pos, fmt::format("writer {} of {} missing", i, count));
    const size_t len = p[pos];
    if (len == 0) return bad(pos, "empty writer reference");
    if (in.size() - pos - 1 < len + 8) {
      return bad(pos, fmt::format("writer {} of {} runs past the trailer", i, count));
    }
    std::string ref(in.substr(pos + 1, len));
    if (!t.writers.empty() && t.writers.back().first >= ref) {
      return bad(pos, "writer references not sorted and unique");
    }
    t.writers.emplace_back(std::move(ref), get_be64(p + pos + 1 + len));
    pos += 1 + len + 8;
  }
  if (pos != in.size())
    return bad(pos, fmt::format("{} bytes after the last writer", in.size() - pos));
  return t;
}

void apply_writer_trailer(const WriterTrailer& t, WriterSequences* map) {
  if (t.snapshot) map->clear();
  for (const auto& [ref, seq] : t.writers) {
    auto [it, inserted] = map->try_emplace(ref, seq);
    if (!inserted) it->second = std::max(it->second, seq);
  }
}

Result<std::optional<WriterSequences>> load_writer_sequences(File& f, const std::string& path,
                                                             uint64_t valid_end) {
  if (valid_end <= kFileHeaderSize) return std::optional<WriterSequences>();
  WriterSequences map;
  FileWindow w(f, valid_end, kScanBlock);
  for (uint64_t pos = kFileHeaderSize; pos < valid_end;) {
    const std::string where = fmt::format("{} position {}", path, pos);
    if (valid_end - pos < kChunkHeaderSize) {
      return Error(Errc::corrupt, fmt::format("{}: truncated chunk header", where));
    }
    STRATA_ASSIGN_OR_RETURN(BytesView hv, w.read(pos, kChunkHeaderSize));
    STRATA_ASSIGN_OR_RETURN(ChunkHeader h, decode_chunk_header(hv, where));
    if (h.total_size() > valid_end - pos) {
      return Error(Errc::corrupt,
                   fmt::format("{}: chunk runs past the valid end {}", where, valid_end));
    }
    STRATA_ASSIGN_OR_RETURN(
        BytesView body, w.read(pos + kChunkHeaderSize, size_t(h.total_size() - kChunkHeaderSize)));
    STRATA_TRY(verify_chunk_body(h, body, where));
    // A trailer may hold only the chunk's filter (log/chunk_filter.h).
    if (!skip_filter_section(body.substr(h.data_len)).empty()) {
      STRATA_ASSIGN_OR_RETURN(WriterTrailer t,
                              decode_writer_trailer(body.substr(h.data_len), where));
      apply_writer_trailer(t, &map);
    } else if (pos == kFileHeaderSize) {
      // A first chunk without a snapshot: no writer existed yet.
      map.clear();
    }
    pos += h.total_size();
  }
  return std::optional<WriterSequences>(std::move(map));
}

}  // namespace strata::log
