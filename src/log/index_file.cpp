#include "log/index_file.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/assert.h"

namespace strata::log {

namespace {

uint64_t record_position(uint64_t i) {
  return kFileHeaderSize + i * kIndexRecordSize;
}

}  // namespace

Result<IndexLoad> load_index(File& f, const std::string& path, uint64_t first_offset) {
  IndexLoad out;
  STRATA_ASSIGN_OR_RETURN(uint64_t size, f.size());
  if (size < kFileHeaderSize) {
    out.damage = Error(Errc::corrupt, fmt::format("{}: index file is {} bytes, shorter than its "
                                                  "header",
                                                  path, size));
    return out;
  }
  Bytes data(size, '\0');
  STRATA_TRY(read_exact(f, 0, data.data(), data.size()));
  auto hdr = decode_file_header(LogFileKind::index, data, path);
  if (!hdr.ok()) {
    out.damage = std::move(hdr).error();
    return out;
  }
  if (*hdr != first_offset) {
    out.damage =
        Error(Errc::corrupt, fmt::format("{}: header says first offset {}, file name says {}", path,
                                         *hdr, first_offset));
    return out;
  }
  out.header_valid = true;
  uint64_t expected_offset = first_offset;
  uint64_t expected_pos = kFileHeaderSize;
  for (uint64_t pos = kFileHeaderSize; pos < size; pos += kIndexRecordSize) {
    std::string where = fmt::format("{} position {}", path, pos);
    auto r = decode_index_record(BytesView(data).substr(pos, kIndexRecordSize), where);
    if (!r.ok()) {
      out.damage = std::move(r).error();
      return out;
    }
    if (r->first_offset != expected_offset || r->position != expected_pos) {
      out.damage =
          Error(Errc::corrupt,
                fmt::format("{}: record for offset {} at segment position {} does not follow "
                            "the previous one (expected offset {} at position {})",
                            where, r->first_offset, r->position, expected_offset, expected_pos));
      return out;
    }
    expected_offset = r->next_offset();
    expected_pos = r->end_position();
    out.records.push_back(*r);
  }
  return out;
}

Result<IndexRecord> read_index_record(File& f, const std::string& path, uint64_t i) {
  char buf[kIndexRecordSize];
  uint64_t pos = record_position(i);
  STRATA_TRY(read_exact(f, pos, buf, sizeof buf));
  return decode_index_record(BytesView(buf, sizeof buf), fmt::format("{} position {}", path, pos));
}

Result<IndexRecord> find_chunk_by_offset(File& f, const std::string& path, uint64_t count,
                                         uint64_t offset) {
  STRATA_ASSERT(count > 0, "search in an empty index");
  // Invariant: record lo starts at or before offset; records from hi on start after it.
  uint64_t lo = 0, hi = count;
  STRATA_ASSIGN_OR_RETURN(IndexRecord best, read_index_record(f, path, 0));
  if (best.first_offset > offset) {
    return Error(Errc::out_of_range, fmt::format("{}: offset {} is before the first chunk ({})",
                                                 path, offset, best.first_offset));
  }
  while (hi - lo > 1) {
    uint64_t mid = lo + (hi - lo) / 2;
    STRATA_ASSIGN_OR_RETURN(IndexRecord r, read_index_record(f, path, mid));
    if (r.first_offset <= offset) {
      lo = mid;
      best = r;
    } else {
      hi = mid;
    }
  }
  return best;
}

Result<std::optional<IndexRecord>> find_chunk_by_timestamp(File& f, const std::string& path,
                                                           uint64_t count, int64_t ts) {
  // Invariant: records before lo have timestamp < ts; records from hi on have >= ts.
  uint64_t lo = 0, hi = count;
  std::optional<IndexRecord> found;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    STRATA_ASSIGN_OR_RETURN(IndexRecord r, read_index_record(f, path, mid));
    if (r.timestamp_ms >= ts) {
      hi = mid;
      found = r;
    } else {
      lo = mid + 1;
    }
  }
  return found;
}

const IndexRecord& find_chunk_by_offset(std::span<const IndexRecord> v, uint64_t offset) {
  STRATA_ASSERT(!v.empty() && v.front().first_offset <= offset, "offset before the index");
  auto it = std::upper_bound(v.begin(), v.end(), offset,
                             [](uint64_t o, const IndexRecord& r) { return o < r.first_offset; });
  return *(it - 1);
}

std::optional<IndexRecord> find_chunk_by_timestamp(std::span<const IndexRecord> v, int64_t ts) {
  auto it = std::lower_bound(v.begin(), v.end(), ts,
                             [](const IndexRecord& r, int64_t t) { return r.timestamp_ms < t; });
  if (it == v.end()) return std::nullopt;
  return *it;
}

}  // namespace strata::log
