#include "log/audit.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/tail_damage.h"

namespace strata::log {

namespace {

bool all_zero(BytesView b) {
  return std::all_of(b.begin(), b.end(), [](char c) { return c == 0; });
}

}  // namespace

// ---------------------------------------------------------- the directory

StreamListing audit_listing(const std::vector<std::string>& names) {
  StreamListing out;
  std::map<uint64_t, std::string> indexes;
  for (const auto& n : names) {
    if (n.size() > 4 && n.compare(n.size() - 4, 4, ".tmp") == 0) {
      out.leftovers.push_back(n);
      continue;
    }
    auto parsed = parse_log_file_name(n);
    if (!parsed.ok()) {
      out.bad_names.push_back(std::move(parsed).error());
      continue;
    }
    if (!*parsed) continue;  // not a log file (e.g. the LOCK file)
    auto& into = (*parsed)->kind == LogFileKind::segment ? out.segments : indexes;
    into[(*parsed)->first_offset] = n;
  }
  for (auto& [first, n] : indexes) {
    if (out.segments.count(first)) {
      out.indexes[first] = std::move(n);
    } else {
      out.orphan_indexes.push_back(std::move(n));
    }
  }
  return out;
}

Error no_segments_error(const std::string& dir) {
  return Error(Errc::not_found, fmt::format("{}: no segment files (not a stream directory)", dir));
}

std::optional<Error> contiguity_error(const std::string& dir, const std::string& prev_file,
                                      uint64_t prev_next, const std::string& name, uint64_t first) {
  if (prev_next == first) return std::nullopt;
  return Error(Errc::corrupt,
               fmt::format("{}: segments are not contiguous: {} ends at offset {} but {} starts "
                           "at {}",
                           dir, prev_file, prev_next, name, first));
}

// ------------------------------------------------------- a segment's header

HeaderVerdict audit_header(BytesView head, uint64_t size, uint64_t name_first,
                           const std::string& path, bool newest) {
  using K = HeaderVerdict::Kind;
  if (size < kFileHeaderSize || all_zero(head.substr(0, kFileHeaderSize))) {
    if (!newest) {
      return {K::corrupt,
              Error(Errc::corrupt, fmt::format("{}: sealed segment has no valid header ({} bytes, "
                                               "header missing or zero); it is not the newest "
                                               "segment, so this is not a torn write",
                                               path, size))};
    }
    return {K::absent,
            Error(Errc::corrupt,
                  size < kFileHeaderSize
                      ? fmt::format("{}: {} bytes, shorter than a segment header", path, size)
                      : fmt::format("{}: segment header is all zero", path))};
  }
  auto first = decode_file_header(LogFileKind::segment, head, path);
  if (!first.ok()) return {K::corrupt, std::move(first).error()};
  if (*first != name_first) {
    return {K::corrupt,
            Error(Errc::corrupt, fmt::format("{}: header says first offset {}, file name says {}",
                                             path, *first, name_first))};
  }
  return {};
}

// --------------------------------------------------------- damage and tails

ScanVerdict audit_newest_scan(const ScanResult& scan) {
  using K = ScanVerdict::Kind;
  if (!scan.damage) return {};
  std::optional<IntactAfter> intact;
  if (scan.intact_after) {
    intact = IntactAfter{scan.intact_after->position, fmt::format("an intact chunk (offset {})",
                                                                  scan.intact_after->first_offset)};
  }
  Status judged = judge_tail_damage(*scan.damage, intact);
  if (judged.ok()) return {K::truncate_tail, scan.damage, scan.valid_end};
  return {K::corrupt, judged.error()};
}

ScanVerdict audit_headerless_scan(const std::optional<ScanResult>& scan, const std::string& path) {
  using K = ScanVerdict::Kind;
  // The missing header is the damage; any intact chunk after it makes it
  // corruption rather than a creation that never completed.
  std::optional<IntactAfter> intact;
  if (scan && !scan->chunks.empty()) {
    intact =
        IntactAfter{scan->chunks.front().position,
                    fmt::format("an intact chunk (offset {})", scan->chunks.front().first_offset)};
  } else if (scan && scan->intact_after) {
    intact =
        IntactAfter{scan->intact_after->position,
                    fmt::format("an intact chunk (offset {})", scan->intact_after->first_offset)};
  }
  Status judged =
      judge_tail_damage(damage_at(path, 0, "segment header is missing or zero"), intact);
  if (judged.ok()) return {K::reinitialise, std::nullopt, 0};
  return {K::corrupt, judged.error()};
}

ScanVerdict audit_sealed_scan(const ScanResult& scan) {
  if (!scan.damage) return {};
  return {ScanVerdict::Kind::corrupt,
          Error(Errc::corrupt, fmt::format("corruption in sealed segment (not the tail of the "
                                           "log): {}",
                                           scan.damage->message))};
}

// ------------------------------------------------------------------ indexes

std::string sealed_index_shape_problem(const IndexLoad& il, uint64_t segment_size,
                                       const std::string& segment_path) {
  if (il.damage) return il.damage->message;
  if (il.records.empty()) {
    if (segment_size == kFileHeaderSize) return std::string();
    return fmt::format("index has no records but the segment holds {} bytes", segment_size);
  }
  const IndexRecord& last = il.records.back();
  if (last.end_position() != segment_size) {
    return fmt::format("index ends at segment position {} but {} is {} bytes", last.end_position(),
                       segment_path, segment_size);
  }
  return std::string();
}

std::string sealed_index_last_record_problem(const IndexRecord& last, BytesView header,
                                             const std::string& segment_path) {
  auto h = decode_chunk_header(header, fmt::format("{} position {}", segment_path, last.position));
  if (!h.ok()) return h.error().message;
  if (h->total_size() > kMaxChunkSize || index_record_for(*h, last.position) != last) {
    return fmt::format("last index record does not match the chunk header at {} position {}",
                       segment_path, last.position);
  }
  return std::string();
}

Result<std::string> sealed_index_problem(File& segment, const std::string& segment_path,
                                         uint64_t segment_size, const IndexLoad& il) {
  std::string problem = sealed_index_shape_problem(il, segment_size, segment_path);
  if (!problem.empty() || il.records.empty()) return problem;
  char buf[kChunkHeaderSize];
  STRATA_TRY(read_exact(segment, il.records.back().position, buf, sizeof buf));
  return sealed_index_last_record_problem(il.records.back(), BytesView(buf, sizeof buf),
                                          segment_path);
}

IndexComparison compare_index(const IndexLoad& il, std::span<const IndexRecord> scanned) {
  IndexComparison c;
  size_t& k = c.matching;
  while (k < il.records.size() && k < scanned.size() && il.records[k] == scanned[k]) ++k;
  if (il.damage) {
    c.problem = il.damage->message;
  } else if (k < il.records.size()) {
    c.problem = fmt::format("index record {} does not match the segment's chunk {}", k,
                            k < scanned.size() ? "there" : "(none: points past the valid end)");
  } else if (k < scanned.size()) {
    c.problem = fmt::format("index lags: {} of {} chunks indexed", k, scanned.size());
  }
  return c;
}

IndexVerdict audit_newest_index(const std::optional<IndexLoad>& il, uint64_t index_size,
                                std::span<const IndexRecord> scanned) {
  using K = IndexVerdict::Kind;
  if (!il) return {K::rebuild, 0, "index file was missing"};
  if (!il->header_valid) {
    return {K::rebuild, 0, il->damage ? il->damage->message : "index header is not valid"};
  }
  const size_t k = compare_index(*il, scanned).matching;
  const uint64_t keep_bytes = kFileHeaderSize + k * kIndexRecordSize;
  if (k < scanned.size() || index_size != keep_bytes) return {K::repair, k, {}};
  return {K::keep, k, {}};
}

}  // namespace strata::log
