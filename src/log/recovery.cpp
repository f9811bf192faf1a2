#include "log/recovery.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

#include "common/tail_damage.h"
#include "log/index_file.h"
#include "log/segment_scan.h"

namespace strata::log {

namespace {

bool all_zero(BytesView b) {
  return std::all_of(b.begin(), b.end(), [](char c) { return c == 0; });
}

void note(RecoveryResult& r, std::string what) {
  spdlog::warn("log recovery: {}", what);
  r.repairs.push_back(std::move(what));
}

Bytes encode_index(uint64_t first_offset, const std::vector<IndexRecord>& recs) {
  Bytes out = encode_file_header(LogFileKind::index, first_offset);
  size_t base = out.size();
  out.resize(base + recs.size() * kIndexRecordSize);
  for (size_t i = 0; i < recs.size(); ++i) {
    encode_index_record(recs[i], u8(out.data() + base + i * kIndexRecordSize));
  }
  return out;
}

Bytes encode_records(const std::vector<IndexRecord>& recs, size_t from) {
  Bytes out((recs.size() - from) * kIndexRecordSize, '\0');
  for (size_t i = from; i < recs.size(); ++i) {
    encode_index_record(recs[i], u8(out.data() + (i - from) * kIndexRecordSize));
  }
  return out;
}

void fill_info(RecoveredSegment& seg, const std::vector<IndexRecord>& recs, uint64_t size) {
  seg.info.size_bytes = size;
  seg.info.chunks = recs.size();
  if (recs.empty()) {
    seg.info.next_offset = seg.info.first_offset;
    return;
  }
  seg.info.next_offset = recs.back().next_offset();
  seg.info.first_timestamp_ms = recs.front().timestamp_ms;
  seg.info.last_timestamp_ms = recs.back().timestamp_ms;
  seg.last_epoch = recs.back().epoch;
}

struct DirListing {
  std::map<uint64_t, std::string> segments;  // first offset -> file name
  std::map<uint64_t, std::string> indexes;
  std::vector<std::string> leftovers;  // *.tmp from an interrupted atomic write
};

Result<DirListing> list_stream_dir(FileSystem& fs, const std::string& dir) {
  STRATA_ASSIGN_OR_RETURN(auto names, fs.list_dir(dir));
  DirListing out;
  for (const auto& n : names) {
    if (n.size() > 4 && n.compare(n.size() - 4, 4, ".tmp") == 0) {
      out.leftovers.push_back(n);
      continue;
    }
    auto parsed = parse_log_file_name(n);
    if (!parsed.ok()) return std::move(parsed).error().with_context("stream directory " + dir);
    if (!*parsed) continue;  // not a log file (e.g. the LOCK file)
    if ((*parsed)->kind == LogFileKind::segment) {
      out.segments[(*parsed)->first_offset] = n;
    } else {
      out.indexes[(*parsed)->first_offset] = n;
    }
  }
  return out;
}

// Reads the file header; `present` is false when the file is shorter than a
// header or the header bytes are all zero (a creation that never completed).
Result<std::optional<uint64_t>> read_segment_header(File& f, const std::string& path,
                                                    uint64_t size) {
  if (size < kFileHeaderSize) return std::optional<uint64_t>();
  char buf[kFileHeaderSize];
  STRATA_TRY(read_exact(f, 0, buf, sizeof buf));
  if (all_zero(BytesView(buf, sizeof buf))) return std::optional<uint64_t>();
  STRATA_ASSIGN_OR_RETURN(
      uint64_t first, decode_file_header(LogFileKind::segment, BytesView(buf, sizeof buf), path));
  return std::optional<uint64_t>(first);
}

Status check_header_offset(const std::string& path, uint64_t header_first, uint64_t name_first) {
  if (header_first != name_first) {
    return Error(Errc::corrupt, fmt::format("{}: header says first offset {}, file name says {}",
                                            path, header_first, name_first));
  }
  return Status::OK();
}

// Why a sealed segment's index cannot be trusted as is ("" = it can).
Result<std::string> sealed_index_problem(File& seg, const std::string& seg_path, uint64_t size,
                                         const IndexLoad& il) {
  if (il.damage) return il.damage->message;
  if (il.records.empty()) {
    if (size == kFileHeaderSize) return std::string();
    return fmt::format("index has no records but the segment holds {} bytes", size);
  }
  const IndexRecord& last = il.records.back();
  if (last.end_position() != size) {
    return fmt::format("index ends at segment position {} but {} is {} bytes", last.end_position(),
                       seg_path, size);
  }
  char buf[kChunkHeaderSize];
  STRATA_TRY(read_exact(seg, last.position, buf, sizeof buf));
  auto h = decode_chunk_header(BytesView(buf, sizeof buf),
                               fmt::format("{} position {}", seg_path, last.position));
  if (!h.ok()) return h.error().message;
  if (h->total_size() > kMaxChunkSize || index_record_for(*h, last.position) != last) {
    return fmt::format("last index record does not match the chunk header at {} position {}",
                       seg_path, last.position);
  }
  return std::string();
}

Result<RecoveredSegment> recover_sealed(FileSystem& fs, const std::string& dir, uint64_t first,
                                        const DirListing& names, const RecoveryOptions& o,
                                        RecoveryResult& result) {
  RecoveredSegment seg;
  seg.info.first_offset = first;
  seg.info.file = path_join(dir, names.segments.at(first));
  seg.index_file = path_join(dir, index_file_name(first));
  const std::string& path = seg.info.file;
  STRATA_ASSIGN_OR_RETURN(auto f, fs.open(path, OpenOptions::read_only()));
  STRATA_ASSIGN_OR_RETURN(uint64_t size, f->size());
  STRATA_ASSIGN_OR_RETURN(auto hdr, read_segment_header(*f, path, size));
  if (!hdr) {
    return Error(Errc::corrupt,
                 fmt::format("{}: sealed segment has no valid header ({} bytes, "
                             "header missing or zero); it is not the newest segment, "
                             "so this is not a torn write",
                             path, size));
  }
  STRATA_TRY(check_header_offset(path, *hdr, first));

  IndexLoad il;
  std::string problem = "index file is missing";
  bool have_index = names.indexes.count(first) > 0;
  if (have_index) {
    STRATA_ASSIGN_OR_RETURN(auto idx, fs.open(seg.index_file, OpenOptions::read_only()));
    STRATA_ASSIGN_OR_RETURN(il, load_index(*idx, seg.index_file, first));
    STRATA_ASSIGN_OR_RETURN(problem, sealed_index_problem(*f, path, size, il));
  }
  std::vector<IndexRecord> recs;
  if (problem.empty() && !o.verify_sealed) {
    recs = std::move(il.records);
  } else {
    ScanOptions so;
    so.expected_first_offset = first;
    STRATA_ASSIGN_OR_RETURN(ScanResult scan, scan_segment(*f, path, so));
    if (scan.damage) {
      return Error(Errc::corrupt,
                   fmt::format("corruption in sealed segment (not the tail of the log): {}",
                               scan.damage->message));
    }
    recs = std::move(scan.chunks);
    if (!o.read_only && (!problem.empty() || il.records != recs)) {
      STRATA_TRY(write_file_atomic(fs, seg.index_file, encode_index(first, recs)));
      note(result, fmt::format("rebuilt index {} from its segment ({})", seg.index_file,
                               problem.empty() ? "index disagreed with a full scan" : problem));
    }
  }
  fill_info(seg, recs, size);
  if (o.read_only) seg.records = std::move(recs);
  return seg;
}

Result<RecoveredSegment> recover_newest(FileSystem& fs, const std::string& dir, uint64_t first,
                                        const DirListing& names, const RecoveryOptions& o,
                                        RecoveryResult& result) {
  RecoveredSegment seg;
  seg.info.first_offset = first;
  seg.info.active = !o.read_only;
  seg.info.file = path_join(dir, names.segments.at(first));
  seg.index_file = path_join(dir, index_file_name(first));
  const std::string& path = seg.info.file;
  STRATA_ASSIGN_OR_RETURN(
      auto f, fs.open(path, o.read_only ? OpenOptions::read_only() : OpenOptions::read_write()));
  STRATA_ASSIGN_OR_RETURN(uint64_t size, f->size());
  STRATA_ASSIGN_OR_RETURN(auto hdr, read_segment_header(*f, path, size));
  ScanOptions so;
  so.expected_first_offset = first;
  so.look_past_damage = true;
  if (!hdr) {
    // A creation that never completed. Only safe to redo if nothing intact
    // was written after the missing header.
    if (size > kFileHeaderSize) {
      STRATA_ASSIGN_OR_RETURN(ScanResult s, scan_segment(*f, path, so));
      if (!s.chunks.empty() || s.intact_after) {
        uint64_t at = s.chunks.empty() ? s.intact_after->position : s.chunks.front().position;
        return Error(Errc::corrupt,
                     fmt::format("{}: segment header is missing or zero but an intact "
                                 "chunk follows at position {}",
                                 path, at));
      }
    }
    if (o.read_only) {
      seg.ignored_tail_bytes = size;
      fill_info(seg, {}, kFileHeaderSize);
      return seg;
    }
    STRATA_TRY(f->truncate(0));
    STRATA_TRY(f->append(encode_file_header(LogFileKind::segment, first)));
    STRATA_TRY(f->sync());
    note(result,
         fmt::format("re-initialised {}: its header was never completely written ({} bytes, "
                     "no intact chunk)",
                     path, size));
    size = kFileHeaderSize;
  } else {
    STRATA_TRY(check_header_offset(path, *hdr, first));
  }

  STRATA_ASSIGN_OR_RETURN(ScanResult scan, scan_segment(*f, path, so));
  uint64_t valid = scan.valid_end;
  if (scan.damage) {
    std::optional<IntactAfter> intact;
    if (scan.intact_after) {
      intact =
          IntactAfter{scan.intact_after->position,
                      fmt::format("an intact chunk (offset {})", scan.intact_after->first_offset)};
    }
    STRATA_TRY(judge_tail_damage(*scan.damage, intact));
    if (o.read_only) {
      seg.ignored_tail_bytes = size - valid;
    } else {
      STRATA_TRY(f->truncate(valid));
      STRATA_TRY(f->sync());
      note(result, fmt::format("truncated torn tail of {} at position {} ({} bytes cut): {}", path,
                               valid, size - valid, scan.damage->message));
    }
  }

  if (!o.read_only) {
    bool have_index = names.indexes.count(first) > 0;
    IndexLoad il;
    if (have_index) {
      STRATA_ASSIGN_OR_RETURN(auto idx, fs.open(seg.index_file, OpenOptions::read_write()));
      STRATA_ASSIGN_OR_RETURN(il, load_index(*idx, seg.index_file, first));
      STRATA_ASSIGN_OR_RETURN(uint64_t idx_size, idx->size());
      size_t k = 0;
      while (k < il.records.size() && k < scan.chunks.size() && il.records[k] == scan.chunks[k])
        ++k;
      uint64_t keep = kFileHeaderSize + k * kIndexRecordSize;
      if (il.header_valid && (k < scan.chunks.size() || idx_size != keep)) {
        if (idx_size != keep) STRATA_TRY(idx->truncate(keep));
        if (k < scan.chunks.size()) STRATA_TRY(idx->append(encode_records(scan.chunks, k)));
        STRATA_TRY(idx->sync());
        note(result,
             fmt::format("repaired index {}: kept {} of {} records, appended {} from the "
                         "segment",
                         seg.index_file, k,
                         (idx_size - std::min(idx_size, kFileHeaderSize)) / kIndexRecordSize,
                         scan.chunks.size() - k));
      } else if (!il.header_valid) {
        have_index = false;
      }
    }
    if (!have_index) {
      STRATA_TRY(write_file_atomic(fs, seg.index_file, encode_index(first, scan.chunks)));
      note(result, fmt::format("rebuilt index {} from its segment ({})", seg.index_file,
                               il.damage ? il.damage->message : "index file was missing"));
    }
  }
  fill_info(seg, scan.chunks, valid);
  if (o.read_only) seg.records = std::move(scan.chunks);
  return seg;
}

}  // namespace

Status create_segment_files(FileSystem& fs, const std::string& dir, uint64_t first_offset) {
  {
    STRATA_ASSIGN_OR_RETURN(auto f, fs.open(path_join(dir, segment_file_name(first_offset)),
                                            OpenOptions::create_new()));
    STRATA_TRY(f->append(encode_file_header(LogFileKind::segment, first_offset)));
    STRATA_TRY(f->sync());
  }
  STRATA_ASSIGN_OR_RETURN(auto idx, fs.open(path_join(dir, index_file_name(first_offset)),
                                            OpenOptions::create_truncate()));
  STRATA_TRY(idx->append(encode_file_header(LogFileKind::index, first_offset)));
  return idx->sync();
}

Result<RecoveryResult> recover_stream(FileSystem& fs, const std::string& dir,
                                      const RecoveryOptions& o) {
  RecoveryResult result;
  auto st = fs.stat(dir);
  if (!st.ok() && st.code() == Errc::not_found && o.create_if_missing && !o.read_only) {
    STRATA_TRY(create_dirs(fs, dir));
  } else if (!st.ok()) {
    return Error(st.code(),
                 fmt::format("stream directory {} cannot be opened: {}", dir, st.error().message));
  } else if (!st->is_dir) {
    return Error(Errc::invalid_argument, fmt::format("{} is not a directory", dir));
  }
  STRATA_ASSIGN_OR_RETURN(DirListing names, list_stream_dir(fs, dir));
  bool dir_changed = false;
  if (names.segments.empty()) {
    if (!o.create_if_missing || o.read_only || !names.indexes.empty()) {
      return Error(Errc::not_found,
                   fmt::format("{}: no segment files (not a stream directory)", dir));
    }
    STRATA_TRY(create_segment_files(fs, dir, 0));
    STRATA_TRY(fs.sync_dir(dir));
    names.segments[0] = segment_file_name(0);
    names.indexes[0] = index_file_name(0);
  }
  if (!o.read_only) {
    for (const auto& n : names.leftovers) {
      STRATA_TRY(fs.remove(path_join(dir, n)));
      note(result, fmt::format("removed leftover temporary file {}", path_join(dir, n)));
      dir_changed = true;
    }
    for (auto it = names.indexes.begin(); it != names.indexes.end();) {
      if (names.segments.count(it->first)) {
        ++it;
        continue;
      }
      STRATA_TRY(fs.remove(path_join(dir, it->second)));
      note(result, fmt::format("removed index {} whose segment no longer exists",
                               path_join(dir, it->second)));
      dir_changed = true;
      it = names.indexes.erase(it);
    }
  }
  uint64_t newest = names.segments.rbegin()->first;
  for (const auto& [first, name] : names.segments) {
    if (!result.segments.empty()) {
      const SegmentInfo& prev = result.segments.back().info;
      if (prev.next_offset != first) {
        return Error(Errc::corrupt,
                     fmt::format("{}: segments are not contiguous: {} ends at offset {} but {} "
                                 "starts at {}",
                                 dir, prev.file, prev.next_offset, name, first));
      }
    }
    Result<RecoveredSegment> seg = first == newest
                                       ? recover_newest(fs, dir, first, names, o, result)
                                       : recover_sealed(fs, dir, first, names, o, result);
    if (!seg.ok()) return std::move(seg).error();
    if (first == newest && !o.read_only && !names.indexes.count(first)) dir_changed = true;
    if (!o.read_only && seg->info.chunks == 0 && first != newest) {
      // An empty sealed segment is legal (nothing after it is lost) but odd.
      spdlog::info("log recovery: sealed segment {} holds no chunks", seg->info.file);
    }
    result.segments.push_back(std::move(*seg));
  }
  if (dir_changed) STRATA_TRY(fs.sync_dir(dir));
  return result;
}

}  // namespace strata::log
