#include "log/inspect.h"

#include <fmt/format.h>

#include <map>

#include "log/index_file.h"
#include "log/segment_scan.h"

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

void examine_index(FileSystem& fs, SegmentReport& s, const std::vector<IndexRecord>& scanned) {
  auto f = fs.open(s.index_file, OpenOptions::read_only());
  if (!f.ok()) {
    s.index_problem = f.error().message;
    return;
  }
  auto il = load_index(**f, s.index_file, s.first_offset);
  if (!il.ok()) {
    s.index_problem = il.error().message;
    return;
  }
  s.index_records = il->records.size();
  size_t k = 0;
  while (k < il->records.size() && k < scanned.size() && il->records[k] == scanned[k]) ++k;
  if (il->damage) {
    s.index_problem = il->damage->message;
  } else if (k < il->records.size()) {
    s.index_problem =
        fmt::format("index record {} does not match the segment's chunk {}", k,
                    k < scanned.size() ? "there" : "(none: points past the valid end)");
  } else if (k < scanned.size()) {
    s.index_problem = fmt::format("index lags: {} of {} chunks indexed", k, scanned.size());
  }
}

}  // namespace

Result<StreamReport> inspect_stream(FileSystem& fs, const std::string& dir,
                                    const InspectOptions& o) {
  StreamReport rep;
  rep.dir = dir;
  STRATA_ASSIGN_OR_RETURN(auto names, fs.list_dir(dir));
  std::map<uint64_t, std::string> segs, idxs;
  for (const auto& n : names) {
    auto p = parse_log_file_name(n);
    if (!p.ok()) {
      rep.problems.push_back(p.error().message + " (open fails)");
      continue;
    }
    if (!*p) continue;
    ((*p)->kind == LogFileKind::segment ? segs : idxs)[(*p)->first_offset] = n;
  }
  for (const auto& [first, n] : idxs) {
    if (!segs.count(first)) {
      rep.orphan_indexes.push_back(path_join(dir, n));
      rep.problems.push_back(
          fmt::format("index {} has no segment (open removes it)", path_join(dir, n)));
    }
  }
  if (segs.empty()) {
    rep.problems.push_back(fmt::format("{} holds no segment files: not a stream directory", dir));
    return rep;
  }
  uint64_t total = 0, done = 0;
  for (const auto& [first, n] : segs) {
    auto st = fs.stat(path_join(dir, n));
    if (st.ok()) total += st->size;
  }
  const uint64_t newest = segs.rbegin()->first;
  for (const auto& [first, n] : segs) {
    SegmentReport s;
    s.file = path_join(dir, n);
    s.index_file = path_join(dir, index_file_name(first));
    s.index_present = idxs.count(first) > 0;
    s.first_offset = s.next_offset = first;
    s.newest = first == newest;
    auto f = fs.open(s.file, OpenOptions::read_only());
    if (!f.ok()) {
      s.header_error = f.error().message;
      rep.problems.push_back(f.error().message);
      rep.segments.push_back(std::move(s));
      continue;
    }
    s.size = *(*f)->size();
    char hb[kFileHeaderSize];
    Status hs = s.size >= kFileHeaderSize ? read_exact(**f, 0, hb, sizeof hb)
                                          : Status(Error(Errc::corrupt, "short"));
    if (!hs.ok()) {
      s.header_error = fmt::format("{}: {} bytes, shorter than a segment header", s.file, s.size);
    } else {
      auto h = decode_file_header(LogFileKind::segment, BytesView(hb, sizeof hb), s.file);
      if (!h.ok()) {
        s.header_error = h.error().message;
      } else if (*h != first) {
        s.header_error =
            fmt::format("{}: header says first offset {}, file name says {}", s.file, *h, first);
      }
    }
    if (s.header_error) {
      rep.problems.push_back(*s.header_error + (s.newest ? " (newest segment: open re-initialises "
                                                           "it only if nothing intact follows)"
                                                         : " (sealed segment: open fails)"));
      rep.segments.push_back(std::move(s));
      continue;
    }
    ScanOptions so;
    so.expected_first_offset = first;
    so.verify_crc = o.verify_crc;
    so.look_past_damage = true;
    if (o.progress) {
      so.progress = [&](uint64_t pos, uint64_t) { o.progress(done + pos, total); };
    }
    auto scan = scan_segment(**f, s.file, so);
    if (!scan.ok()) return std::move(scan).error();
    done += s.size;
    s.valid_end = scan->valid_end;
    s.chunks = scan->chunks.size();
    if (!scan->chunks.empty()) {
      s.next_offset = scan->chunks.back().next_offset();
      s.records = s.next_offset - first;
      s.first_timestamp_ms = scan->chunks.front().timestamp_ms;
      s.last_timestamp_ms = scan->chunks.back().timestamp_ms;
      s.min_epoch = s.max_epoch = scan->chunks.front().epoch;
      for (const auto& c : scan->chunks) {
        s.min_epoch = std::min(s.min_epoch, c.epoch);
        s.max_epoch = std::max(s.max_epoch, c.epoch);
      }
    }
    if (scan->damage) {
      s.damage = scan->damage->message;
      s.intact_chunk_after_damage = scan->intact_after.has_value();
      if (!s.newest) {
        rep.problems.push_back(*s.damage + " (sealed segment: corruption, reads fail there)");
      } else if (s.intact_chunk_after_damage) {
        rep.problems.push_back(*s.damage + " (an intact chunk follows: corruption, open fails)");
      } else {
        rep.problems.push_back(
            fmt::format("{} (incomplete tail of {} bytes: in flight, or torn; "
                        "open truncates it)",
                        *s.damage, s.size - s.valid_end));
      }
    }
    if (s.index_present) {
      examine_index(fs, s, scan->chunks);
    } else {
      s.index_problem = "index file missing";
    }
    if (s.index_problem) {
      rep.problems.push_back(
          fmt::format("{}: {} (open rebuilds it)", s.index_file, *s.index_problem));
    }
    if (!rep.segments.empty() && rep.segments.back().next_offset != first &&
        !rep.segments.back().header_error) {
      rep.problems.push_back(
          fmt::format("segments not contiguous: {} ends at offset {} but {} starts "
                      "at {} (open fails)",
                      rep.segments.back().file, rep.segments.back().next_offset, s.file, first));
    }
    if (o.include_chunks) s.chunk_list = std::move(scan->chunks);
    rep.chunks += s.chunks;
    rep.records += s.records;
    rep.bytes += s.size;
    rep.segments.push_back(std::move(s));
  }
  rep.first_offset = rep.segments.front().first_offset;
  rep.next_offset = rep.segments.back().next_offset;
  return rep;
}

}  // namespace strata::log
