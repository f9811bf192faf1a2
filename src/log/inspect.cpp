#include "log/inspect.h"

#include <fmt/format.h>

#include <algorithm>

#include "log/audit.h"
#include "log/index_file.h"
#include "log/segment_scan.h"
#include "log/sync_mark.h"

namespace strata::log {

bool is_stream_dir(FileSystem& fs, const std::string& dir) {
  auto names = fs.list_dir(dir);
  if (!names.ok()) return false;
  for (const auto& n : *names) {
    auto p = parse_log_file_name(n);
    if (p.ok() && *p && (*p)->kind == LogFileKind::segment) return true;
  }
  return false;
}

namespace {

// Bytes verified so far and in all, for InspectOptions::progress.
struct Progress {
  uint64_t done = 0;
  uint64_t total = 0;
};

// Every problem of the listing itself, phrased as audit judges it.
void report_listing(const std::string& dir, const StreamListing& names, StreamReport& rep) {
  for (const auto& e : names.bad_names) {
    rep.problems.push_back(fmt::format("stream directory {}: {} (open fails)", dir, e.message));
  }
  for (const auto& n : names.leftovers) {
    rep.problems.push_back(
        fmt::format("leftover temporary file {} (open removes it)", path_join(dir, n)));
  }
  for (const auto& n : names.orphan_indexes) {
    rep.orphan_indexes.push_back(path_join(dir, n));
    rep.problems.push_back(
        fmt::format("index {} has no segment (open removes it)", path_join(dir, n)));
  }
}

// Open recovers the newest segment, and every maybe-unsynced one, by
// scanning it and cutting a torn tail (recovery.cpp, the same rule).
bool like_newest(const SegmentReport& s) {
  return s.newest || s.maybe_unsynced;
}

void record_chunks(SegmentReport& s, const std::vector<IndexRecord>& chunks) {
  s.chunks = chunks.size();
  if (chunks.empty()) return;
  s.next_offset = chunks.back().next_offset();
  s.records = s.next_offset - s.first_offset;
  s.first_timestamp_ms = chunks.front().timestamp_ms;
  s.last_timestamp_ms = chunks.back().timestamp_ms;
  s.min_epoch = s.max_epoch = chunks.front().epoch;
  for (const auto& c : chunks) {
    s.min_epoch = std::min(s.min_epoch, c.epoch);
    s.max_epoch = std::max(s.max_epoch, c.epoch);
  }
}

// A segment's index as open loads it; nullopt `load` if the file is missing.
struct LoadedIndex {
  std::optional<IndexLoad> load;
  uint64_t size = 0;
};

Result<LoadedIndex> load_segment_index(FileSystem& fs, const SegmentReport& s) {
  LoadedIndex out;
  if (!s.index_present) return out;
  STRATA_ASSIGN_OR_RETURN(auto f, fs.open(s.index_file, OpenOptions::read_only()));
  STRATA_ASSIGN_OR_RETURN(out.load, load_index(*f, s.index_file, s.first_offset));
  STRATA_ASSIGN_OR_RETURN(out.size, f->size());
  return out;
}

// What open does with a sealed segment: it trusts the index (and does not
// read the chunks) unless audit finds a reason not to (returned).
Result<std::string> sealed_distrust(File& segment, const SegmentReport& s, const LoadedIndex& idx) {
  if (!idx.load) return std::string("index file is missing");
  return sealed_index_problem(segment, s.file, s.size, *idx.load);
}

// The chunk walk and what open would do about the damage it found.
void report_scan(const ScanResult& scan, const std::string& distrust, SegmentReport& s,
                 StreamReport& rep) {
  s.valid_end = scan.valid_end;
  record_chunks(s, scan.chunks);
  if (!scan.damage) return;
  s.damage = scan.damage->message;
  s.intact_chunk_after_damage = scan.intact_after.has_value();
  if (!like_newest(s)) {
    const std::string what = audit_sealed_scan(scan).problem->message;
    rep.problems.push_back(
        distrust.empty()
            ? what +
                  " (open trusts the index and does not read the chunks; reads fail "
                  "there, and so does an open with verify_sealed_on_open)"
            : fmt::format("{} (the index is not trusted ({}), so open scans the segment and "
                          "fails)",
                          what, distrust));
    return;
  }
  ScanVerdict v = audit_newest_scan(scan);
  if (v.kind == ScanVerdict::Kind::corrupt) {
    rep.problems.push_back(v.problem->message + " (open fails)");
    return;
  }
  s.cut_by_open = true;
  if (!s.newest) {
    rep.problems.push_back(fmt::format(
        "{} (torn tail of {} bytes in a segment sealed under fsync=never and not yet synced "
        "when the machine stopped; open truncates it and drops every later segment)",
        *s.damage, s.size - s.valid_end));
  } else {
    rep.problems.push_back(
        fmt::format("{} (incomplete tail of {} bytes: in flight, or torn; open truncates it)",
                    *s.damage, s.size - s.valid_end));
  }
}

// The index compared with the scan, and what open would do about it.
void report_index(const LoadedIndex& idx, const std::string& distrust,
                  const std::vector<IndexRecord>& scanned, SegmentReport& s, StreamReport& rep) {
  if (!idx.load) {
    s.index_problem = "index file missing";
    rep.problems.push_back(fmt::format("{}: index file missing (open rebuilds it)", s.index_file));
    return;
  }
  s.index_records = idx.load->records.size();
  s.index_problem = compare_index(*idx.load, scanned).problem;
  if (!s.index_problem) return;
  std::string remedy = "open rebuilds it";
  if (like_newest(s)) {
    IndexVerdict v = audit_newest_index(idx.load, idx.size, scanned);
    if (v.kind == IndexVerdict::Kind::repair) remedy = "open repairs it";
    if (v.kind == IndexVerdict::Kind::keep) remedy = "open keeps it";
  } else if (distrust.empty()) {
    remedy =
        "open trusts it: it ends where the segment does and its last record matches; "
        "verify_sealed_on_open rebuilds it";
  }
  rep.problems.push_back(fmt::format("{}: {} ({})", s.index_file, *s.index_problem, remedy));
}

// Index and chunks of a segment whose header is valid. An index that cannot
// be read is a problem (open fails on it); a chunk walk that cannot read is
// an error. Returns the segment's next offset as open sees it: a trusted
// sealed index stands in for the chunks.
Result<uint64_t> report_contents(FileSystem& fs, File& f, const ScanOptions& so,
                                 bool include_chunks, SegmentReport& s, StreamReport& rep) {
  auto idx = load_segment_index(fs, s);
  std::string distrust;
  if (idx.ok() && !like_newest(s)) {
    auto d = sealed_distrust(f, s, *idx);
    if (d.ok()) distrust = std::move(*d);
    if (!d.ok()) idx = std::move(d).error();
  }
  STRATA_ASSIGN_OR_RETURN(ScanResult scan, scan_segment(f, s.file, so));
  report_scan(scan, distrust, s, rep);
  if (idx.ok()) {
    report_index(*idx, distrust, scan.chunks, s, rep);
  } else {
    s.index_problem = idx.error().message;
    rep.problems.push_back(fmt::format("{}: {} (open fails)", s.index_file, idx.error().message));
  }
  if (include_chunks) s.chunk_list = std::move(scan.chunks);
  if (!like_newest(s) && idx.ok() && idx->load && distrust.empty() && !idx->load->records.empty()) {
    return idx->load->records.back().next_offset();
  }
  return s.next_offset;
}

// The header, and what open would do about a bad one (a headerless newest
// segment is scanned to tell). False if the chunks cannot be walked.
Result<bool> report_header(File& f, const ScanOptions& so, SegmentReport& s, StreamReport& rep) {
  Bytes head(size_t(std::min<uint64_t>(s.size, kFileHeaderSize)), '\0');
  if (Status rs = read_exact(f, 0, head.data(), head.size()); !rs.ok()) {
    s.header_error = rs.error().message;
    rep.problems.push_back(rs.error().message + " (open fails)");
    return false;
  }
  HeaderVerdict hv = audit_header(head, s.size, s.first_offset, s.file, like_newest(s));
  if (hv.kind == HeaderVerdict::Kind::valid) return true;
  s.header_error = hv.problem->message;
  std::string remedy = like_newest(s) ? "newest segment: open fails" : "sealed segment: open fails";
  if (hv.kind == HeaderVerdict::Kind::absent) {
    std::optional<ScanResult> scan;
    if (s.size > kFileHeaderSize) {
      STRATA_ASSIGN_OR_RETURN(scan, scan_segment(f, s.file, so));
    }
    ScanVerdict v = audit_headerless_scan(scan, s.file);
    remedy = v.kind == ScanVerdict::Kind::corrupt
                 ? v.problem->message + "; open fails"
                 : "newest segment, nothing intact follows: open re-initialises it";
  }
  rep.problems.push_back(fmt::format("{} ({})", *s.header_error, remedy));
  return false;
}

struct Examined {
  SegmentReport report;
  std::optional<uint64_t> open_next;  // as open sees it; nullopt if open cannot tell
};

// One segment: header, chunk walk (with CRCs unless told otherwise), index.
// Errors: only a failed read during a chunk walk.
Result<Examined> inspect_segment(FileSystem& fs, const std::string& dir, uint64_t first,
                                 const StreamListing& names, const InspectOptions& o,
                                 Progress& progress, StreamReport& rep) {
  Examined e;
  SegmentReport& s = e.report;
  s.file = path_join(dir, names.segments.at(first));
  s.index_file = path_join(dir, index_file_name(first));
  s.index_present = names.indexes.count(first) > 0;
  s.first_offset = s.next_offset = first;
  s.newest = first == names.segments.rbegin()->first;
  s.maybe_unsynced = rep.synced_below && first >= *rep.synced_below;
  auto opened = fs.open(s.file, OpenOptions::read_only());
  auto size = opened.ok() ? (*opened)->size() : Result<uint64_t>(opened.error());
  if (!size.ok()) {
    s.header_error = size.error().message;
    rep.problems.push_back(size.error().message + " (open fails)");
    return e;
  }
  File& f = **opened;
  s.size = *size;
  ScanOptions so;
  so.expected_first_offset = first;
  so.verify_crc = o.verify_crc;
  so.look_past_damage = true;
  if (o.progress) {
    so.progress = [&](uint64_t pos, uint64_t) { o.progress(progress.done + pos, progress.total); };
  }
  STRATA_ASSIGN_OR_RETURN(bool walkable, report_header(f, so, s, rep));
  if (walkable) {
    STRATA_ASSIGN_OR_RETURN(e.open_next, report_contents(fs, f, so, o.include_chunks, s, rep));
  }
  progress.done += s.size;
  return e;
}

uint64_t total_bytes(FileSystem& fs, const std::string& dir, const StreamListing& names) {
  uint64_t total = 0;
  for (const auto& [first, n] : names.segments) {
    auto st = fs.stat(path_join(dir, n));
    if (st.ok()) total += st->size;
  }
  return total;
}

}  // namespace

Result<StreamReport> inspect_stream(FileSystem& fs, const std::string& dir,
                                    const InspectOptions& o) {
  StreamReport rep;
  rep.dir = dir;
  STRATA_ASSIGN_OR_RETURN(auto entries, fs.list_dir(dir));
  const StreamListing names = audit_listing(entries);
  report_listing(dir, names, rep);
  if (names.segments.empty()) {
    rep.problems.push_back(no_segments_error(dir).message);
    return rep;
  }
  auto mark = read_sync_mark(fs, dir);
  if (mark.ok()) {
    rep.synced_below = *mark;
  } else {
    rep.problems.push_back(mark.error().message + " (open fails)");
  }
  Progress progress{0, total_bytes(fs, dir, names)};
  std::optional<uint64_t> prev_next;
  // Where open ends the log: a maybe-unsynced segment cut short or ending
  // before its successor; every later segment is dropped (recovery.cpp).
  std::optional<std::string> ends_in;
  for (const auto& [first, name] : names.segments) {
    STRATA_ASSIGN_OR_RETURN(Examined e, inspect_segment(fs, dir, first, names, o, progress, rep));
    if (ends_in) {
      e.report.dropped_by_open = true;
      rep.problems.push_back(fmt::format(
          "segment {}: open drops it (the maybe-unsynced segment {} before it ends early)",
          e.report.file, *ends_in));
    } else if (prev_next) {
      const SegmentReport& prev = rep.segments.back();
      if (auto gap = contiguity_error(dir, prev.file, *prev_next, name, first)) {
        if (prev.maybe_unsynced && *prev_next < first) {
          ends_in = prev.file;
          e.report.dropped_by_open = true;
          rep.problems.push_back(fmt::format(
              "{} (segment {} was sealed under fsync=never and lost its last chunks before "
              "they were synced; open drops {} and every later segment)",
              gap->message, prev.file, e.report.file));
        } else {
          rep.problems.push_back(gap->message + " (open fails)");
        }
      }
    }
    if (!ends_in && e.report.cut_by_open && !e.report.newest) ends_in = e.report.file;
    prev_next = e.open_next;
    SegmentReport& s = e.report;
    if (!s.header_error && !s.dropped_by_open) {
      rep.chunks += s.chunks;
      rep.records += s.records;
      rep.bytes += s.size;
    }
    rep.segments.push_back(std::move(s));
  }
  rep.first_offset = rep.segments.front().first_offset;
  rep.next_offset = rep.segments.back().next_offset;
  for (const auto& s : rep.segments) {
    if (s.dropped_by_open) break;
    rep.next_offset = s.next_offset;
  }
  return rep;
}

}  // namespace strata::log
