#include "log/recovery.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <span>

#include "log/audit.h"
#include "log/index_file.h"
#include "log/segment_scan.h"
#include "log/sync_mark.h"

namespace strata::log {

namespace {

void note(RecoveryResult& r, std::string what) {
  spdlog::warn("log recovery: {}", what);
  r.repairs.push_back(std::move(what));
}

Bytes encode_index(uint64_t first_offset, std::span<const IndexRecord> recs) {
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

// The first min(size, header) bytes of a segment, for audit_header.
Result<Bytes> read_head(File& f, uint64_t size) {
  Bytes head(size_t(std::min<uint64_t>(size, kFileHeaderSize)), '\0');
  STRATA_TRY(read_exact(f, 0, head.data(), head.size()));
  return head;
}

Status rebuild_index(FileSystem& fs, const RecoveredSegment& seg, std::span<const IndexRecord> recs,
                     const std::string& why, RecoveryResult& result) {
  STRATA_TRY(write_file_atomic(fs, seg.index_file, encode_index(seg.info.first_offset, recs)));
  note(result, fmt::format("rebuilt index {} from its segment ({})", seg.index_file, why));
  return Status::OK();
}

RecoveredSegment segment_named(const std::string& dir, uint64_t first, const StreamListing& names) {
  RecoveredSegment seg;
  seg.info.first_offset = first;
  seg.info.file = path_join(dir, names.segments.at(first));
  seg.index_file = path_join(dir, index_file_name(first));
  return seg;
}

Result<RecoveredSegment> recover_sealed(FileSystem& fs, const std::string& dir, uint64_t first,
                                        const StreamListing& names, const RecoveryOptions& o,
                                        RecoveryResult& result) {
  RecoveredSegment seg = segment_named(dir, first, names);
  const std::string& path = seg.info.file;
  STRATA_ASSIGN_OR_RETURN(auto f, fs.open(path, OpenOptions::read_only()));
  STRATA_ASSIGN_OR_RETURN(uint64_t size, f->size());
  STRATA_ASSIGN_OR_RETURN(Bytes head, read_head(*f, size));
  HeaderVerdict hv = audit_header(head, size, first, path, /*newest=*/false);
  if (hv.kind != HeaderVerdict::Kind::valid) return std::move(*hv.problem);

  IndexLoad il;
  std::string problem = "index file is missing";
  if (names.indexes.count(first)) {
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
    ScanVerdict sv = audit_sealed_scan(scan);
    if (sv.kind == ScanVerdict::Kind::corrupt) return std::move(*sv.problem);
    recs = std::move(scan.chunks);
    auto disagreement = compare_index(il, recs).problem;
    if (!o.read_only && (!problem.empty() || disagreement)) {
      STRATA_TRY(rebuild_index(fs, seg, recs, problem.empty() ? *disagreement : problem, result));
    }
  }
  fill_info(seg, recs, size);
  if (o.read_only) seg.records = std::move(recs);
  return seg;
}

// Makes the newest segment's index match its scan (writer mode only).
Status repair_newest_index(FileSystem& fs, const RecoveredSegment& seg, bool have_index,
                           const std::vector<IndexRecord>& scanned, RecoveryResult& result) {
  std::optional<IndexLoad> il;
  std::unique_ptr<File> idx;
  uint64_t idx_size = 0;
  if (have_index) {
    STRATA_ASSIGN_OR_RETURN(idx, fs.open(seg.index_file, OpenOptions::read_write()));
    STRATA_ASSIGN_OR_RETURN(il, load_index(*idx, seg.index_file, seg.info.first_offset));
    STRATA_ASSIGN_OR_RETURN(idx_size, idx->size());
  }
  IndexVerdict v = audit_newest_index(il, idx_size, scanned);
  switch (v.kind) {
    case IndexVerdict::Kind::keep:
      return Status::OK();
    case IndexVerdict::Kind::rebuild:
      idx.reset();
      return rebuild_index(fs, seg, scanned, v.reason, result);
    case IndexVerdict::Kind::repair:
      break;
  }
  const uint64_t keep = kFileHeaderSize + v.keep_records * kIndexRecordSize;
  if (idx_size != keep) STRATA_TRY(idx->truncate(keep));
  if (v.keep_records < scanned.size()) {
    STRATA_TRY(idx->append(encode_records(scanned, v.keep_records)));
  }
  STRATA_TRY(idx->sync());
  note(result, fmt::format("repaired index {}: kept {} of {} records, appended {} from the segment",
                           seg.index_file, v.keep_records,
                           (idx_size - std::min(idx_size, kFileHeaderSize)) / kIndexRecordSize,
                           scanned.size() - v.keep_records));
  return Status::OK();
}

// A newest segment whose header never reached the disk: re-initialised if
// nothing intact follows (audit_headerless_scan). Returns the new size.
Result<uint64_t> recover_headerless(File& f, const std::string& path, uint64_t size,
                                    const ScanOptions& so, const RecoveryOptions& o,
                                    RecoveredSegment& seg, RecoveryResult& result) {
  std::optional<ScanResult> scan;
  if (size > kFileHeaderSize) {
    STRATA_ASSIGN_OR_RETURN(scan, scan_segment(f, path, so));
  }
  ScanVerdict v = audit_headerless_scan(scan, path);
  if (v.kind == ScanVerdict::Kind::corrupt) return std::move(*v.problem);
  if (o.read_only) {
    seg.ignored_tail_bytes = size;
    return uint64_t(kFileHeaderSize);
  }
  STRATA_TRY(f.truncate(0));
  STRATA_TRY(f.append(encode_file_header(LogFileKind::segment, seg.info.first_offset)));
  STRATA_TRY(f.sync());
  note(result, fmt::format("re-initialised {}: its header was never completely written ({} bytes, "
                           "no intact chunk)",
                           path, size));
  return uint64_t(kFileHeaderSize);
}

// Also recovers a sealed segment that may not have been synced (at or above
// the sync mark): `*cut` tells whether its end was cut or ignored, in which
// case it ends the log.
Result<RecoveredSegment> recover_newest(FileSystem& fs, const std::string& dir, uint64_t first,
                                        const StreamListing& names, const RecoveryOptions& o,
                                        RecoveryResult& result, bool* cut) {
  *cut = false;
  RecoveredSegment seg = segment_named(dir, first, names);
  seg.info.active = !o.read_only;
  const std::string& path = seg.info.file;
  STRATA_ASSIGN_OR_RETURN(
      auto f, fs.open(path, o.read_only ? OpenOptions::read_only() : OpenOptions::read_write()));
  STRATA_ASSIGN_OR_RETURN(uint64_t size, f->size());
  STRATA_ASSIGN_OR_RETURN(Bytes head, read_head(*f, size));
  HeaderVerdict hv = audit_header(head, size, first, path, /*newest=*/true);
  if (hv.kind == HeaderVerdict::Kind::corrupt) return std::move(*hv.problem);
  ScanOptions so;
  so.expected_first_offset = first;
  so.look_past_damage = true;
  if (hv.kind == HeaderVerdict::Kind::absent) {
    *cut = true;
    STRATA_ASSIGN_OR_RETURN(size, recover_headerless(*f, path, size, so, o, seg, result));
    if (o.read_only) {
      fill_info(seg, {}, size);
      return seg;
    }
  }

  STRATA_ASSIGN_OR_RETURN(ScanResult scan, scan_segment(*f, path, so));
  ScanVerdict v = audit_newest_scan(scan);
  if (v.kind == ScanVerdict::Kind::corrupt) return std::move(*v.problem);
  const uint64_t valid = scan.valid_end;
  if (v.kind == ScanVerdict::Kind::truncate_tail) {
    *cut = true;
    if (o.read_only) {
      seg.ignored_tail_bytes = size - valid;
    } else {
      STRATA_TRY(f->truncate(valid));
      STRATA_TRY(f->sync());
      note(result, fmt::format("truncated torn tail of {} at position {} ({} bytes cut): {}", path,
                               valid, size - valid, v.problem->message));
    }
  }
  if (!o.read_only) {
    STRATA_TRY(repair_newest_index(fs, seg, names.indexes.count(first) > 0, scan.chunks, result));
  }
  fill_info(seg, scan.chunks, valid);
  if (o.read_only) seg.records = std::move(scan.chunks);
  return seg;
}

}  // namespace

Status create_segment_files(FileSystem& fs, const std::string& dir, uint64_t first_offset,
                            bool sync) {
  {
    STRATA_ASSIGN_OR_RETURN(auto f, fs.open(path_join(dir, segment_file_name(first_offset)),
                                            OpenOptions::create_new()));
    STRATA_TRY(f->append(encode_file_header(LogFileKind::segment, first_offset)));
    if (sync) STRATA_TRY(f->sync());
  }
  STRATA_ASSIGN_OR_RETURN(auto idx, fs.open(path_join(dir, index_file_name(first_offset)),
                                            OpenOptions::create_truncate()));
  STRATA_TRY(idx->append(encode_file_header(LogFileKind::index, first_offset)));
  return sync ? idx->sync() : Status::OK();
}

namespace {

// Removes what open removes before looking at segments: leftover temporary
// files and indexes without a segment. Returns whether the directory changed.
Result<bool> remove_leftovers(FileSystem& fs, const std::string& dir, const StreamListing& names,
                              RecoveryResult& result) {
  for (const auto& n : names.leftovers) {
    STRATA_TRY(fs.remove(path_join(dir, n)));
    note(result, fmt::format("removed leftover temporary file {}", path_join(dir, n)));
  }
  for (const auto& n : names.orphan_indexes) {
    STRATA_TRY(fs.remove(path_join(dir, n)));
    note(result, fmt::format("removed index {} whose segment no longer exists", path_join(dir, n)));
  }
  return !names.leftovers.empty() || !names.orphan_indexes.empty();
}

Status check_stream_dir(FileSystem& fs, const std::string& dir, const RecoveryOptions& o) {
  auto st = fs.stat(dir);
  if (!st.ok() && st.code() == Errc::not_found && o.create_if_missing && !o.read_only) {
    return create_dirs(fs, dir);
  }
  if (!st.ok()) {
    return Error(st.code(),
                 fmt::format("stream directory {} cannot be opened: {}", dir, st.error().message));
  }
  if (!st->is_dir) return Error(Errc::invalid_argument, fmt::format("{} is not a directory", dir));
  return Status::OK();
}

}  // namespace

Result<RecoveryResult> recover_stream(FileSystem& fs, const std::string& dir,
                                      const RecoveryOptions& o) {
  RecoveryResult result;
  STRATA_TRY(check_stream_dir(fs, dir, o));
  STRATA_ASSIGN_OR_RETURN(auto entries, fs.list_dir(dir));
  StreamListing names = audit_listing(entries);
  if (!names.bad_names.empty()) {
    return std::move(names.bad_names.front()).with_context("stream directory " + dir);
  }
  bool dir_changed = false;
  if (names.segments.empty()) {
    if (!o.create_if_missing || o.read_only || !names.orphan_indexes.empty()) {
      return no_segments_error(dir);
    }
    STRATA_TRY(create_segment_files(fs, dir, o.first_offset));
    STRATA_TRY(fs.sync_dir(dir));
    names.segments[o.first_offset] = segment_file_name(o.first_offset);
    names.indexes[o.first_offset] = index_file_name(o.first_offset);
  }
  if (!o.read_only) {
    STRATA_ASSIGN_OR_RETURN(dir_changed, remove_leftovers(fs, dir, names, result));
  }
  STRATA_ASSIGN_OR_RETURN(result.synced_below, read_sync_mark(fs, dir));
  // Sealed segments at or above the mark may not have been synced before
  // the machine stopped (fsync=never seals them in the background).
  auto maybe_unsynced = [&](uint64_t first) {
    return result.synced_below && first >= *result.synced_below;
  };
  const uint64_t newest = names.segments.rbegin()->first;
  // Set once a maybe-unsynced segment was cut short: the log ends there,
  // and every later segment (written after data that is lost) is dropped.
  std::optional<uint64_t> ends_at;
  std::vector<uint64_t> dropped;
  for (const auto& [first, name] : names.segments) {
    if (!ends_at && !result.segments.empty()) {
      const SegmentInfo& prev = result.segments.back().info;
      if (auto e = contiguity_error(dir, prev.file, prev.next_offset, name, first)) {
        // A maybe-unsynced segment that lost whole chunks at its end looks
        // intact but stops short of its successor. An overlap is never
        // that.
        if (!maybe_unsynced(prev.first_offset) || prev.next_offset > first) return *e;
        ends_at = prev.first_offset;
      }
    }
    if (ends_at) {
      dropped.push_back(first);
      continue;
    }
    bool cut = false;
    const bool like_newest = first == newest || maybe_unsynced(first);
    Result<RecoveredSegment> seg = like_newest
                                       ? recover_newest(fs, dir, first, names, o, result, &cut)
                                       : recover_sealed(fs, dir, first, names, o, result);
    if (!seg.ok()) return std::move(seg).error();
    if (like_newest && !o.read_only && !names.indexes.count(first)) dir_changed = true;
    if (first != newest) {
      seg->info.active = false;
      if (cut) {
        ends_at = first;
        seg->info.active = !o.read_only;
      }
    }
    if (!o.read_only && seg->info.chunks == 0 && first != newest && !cut) {
      // An empty sealed segment is legal (nothing after it is lost) but odd.
      spdlog::info("log recovery: sealed segment {} holds no chunks", seg->info.file);
    }
    result.segments.push_back(std::move(*seg));
  }
  if (!dropped.empty()) {
    if (!o.read_only) {
      // Newest first, so that a crash in between leaves a prefix of the
      // segments (the next recovery drops the rest).
      for (auto it = dropped.rbegin(); it != dropped.rend(); ++it) {
        if (names.indexes.count(*it)) STRATA_TRY(fs.remove(path_join(dir, index_file_name(*it))));
        STRATA_TRY(fs.remove(path_join(dir, names.segments.at(*it))));
      }
      dir_changed = true;
    }
    note(result,
         fmt::format("{} {} segment(s) from offset {} on: segment {} was sealed under "
                     "fsync=never and not yet synced when the machine stopped, and it "
                     "ends early (offsets {} on are lost; fsync=never keeps acknowledged "
                     "records across a process crash, not a power loss)",
                     o.read_only ? "ignored" : "dropped", dropped.size(), dropped.front(),
                     result.segments.back().info.file, result.segments.back().info.next_offset));
  }
  if (dir_changed) STRATA_TRY(fs.sync_dir(dir));
  return result;
}

}  // namespace strata::log
