#include "import/rabbit_import.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>

#include "common/assert.h"
#include "common/name_component.h"
#include "import/osiris_segment.h"
#include "import/osiris_tracking.h"
#include "server/definitions_streams.h"

namespace strata::import {

namespace {

constexpr uint64_t kProgressEveryBytes = 8ull << 20;

std::string mark_path(const std::string& data_dir, const std::string& stream) {
  return path_join(import_marks_dir(data_dir), name_component(stream) + ".pending");
}

// The offset osiris named a segment file by (its first chunk's id).
uint64_t segment_offset(const std::string& path) {
  const std::string base = path_basename(path);
  uint64_t v = 0;
  std::from_chars(base.data(), base.data() + base.size(), v);
  return v;
}

// The chunks of one segment against its index: each record must name the
// chunk read at that place (a segment cut at a chunk boundary passes every
// CRC; its index still names what is missing).
class IndexCheck {
 public:
  IndexCheck(FileSystem& fs, const std::string& segment, std::vector<std::string>* notes) {
    path_ = segment.substr(0, segment.size() - 8) + ".index";
    auto recs = read_osiris_index(fs, path_);
    if (recs.ok()) {
      records_ = std::move(recs).value();
      have_ = true;
    } else if (recs.code() == Errc::not_found) {
      notes->push_back(fmt::format("{} is missing: the segment was read without it", path_));
    } else {
      error_ = recs.error().to_string();
    }
  }
  Status open_error() const {
    if (error_.empty()) return Status::OK();
    return Error(Errc::corrupt, error_);
  }
  Status chunk(const OsirisChunk& c) {
    const size_t k = seen_++;
    if (!have_ || k >= records_.size()) return Status::OK();
    const OsirisIndexRecord& r = records_[k];
    if (r.chunk_id != c.chunk_id || r.position != c.position) {
      return Error(Errc::corrupt,
                   fmt::format("{} record {} (byte {}) names chunk {} at byte {}, the segment has "
                               "chunk {} there",
                               path_, k, kOsirisFileHeaderSize + k * kOsirisIndexRecordSize,
                               r.chunk_id, r.position, c.chunk_id, c.position));
    }
    return Status::OK();
  }
  Status end(const std::string& segment) const {
    if (!have_ || seen_ >= records_.size()) return Status::OK();
    const OsirisIndexRecord& r = records_[seen_];
    return Error(Errc::corrupt,
                 fmt::format("{} ends after {} chunks, but its index {} names chunk {} at byte {} "
                             "(the segment was cut short)",
                             segment, seen_, path_, r.chunk_id, r.position));
  }

 private:
  std::string path_;
  std::vector<OsirisIndexRecord> records_;
  bool have_ = false;
  std::string error_;
  size_t seen_ = 0;
};

}  // namespace

std::string import_marks_dir(const std::string& data_dir) {
  return path_join(data_dir, "import");
}

Result<std::vector<std::string>> undo_unfinished_imports(FileSystem& fs,
                                                         const std::string& data_dir,
                                                         node::Node& node,
                                                         server::OffsetStore& offsets) {
  std::vector<std::string> undone;
  const std::string dir = import_marks_dir(data_dir);
  if (!exists(fs, dir)) return undone;
  STRATA_ASSIGN_OR_RETURN(auto names, fs.list_dir(dir));
  for (const auto& n : names) {
    if (!n.ends_with(".pending")) continue;
    const std::string path = path_join(dir, n);
    STRATA_ASSIGN_OR_RETURN(Bytes stream, read_file(fs, path));
    const auto present = node.streams();
    if (std::find(present.begin(), present.end(), stream) != present.end()) {
      if (Status s = node.delete_stream(stream); !s.ok()) {
        return std::move(s).error().with_context("removing " + stream +
                                                 ", left half-imported by an earlier run");
      }
    }
    STRATA_TRY(offsets.remove_stream(stream));
    offsets.stream_created(stream);
    STRATA_TRY(fs.remove(path));
    undone.push_back(stream);
  }
  return undone;
}

Status finish_imports(FileSystem& fs, const std::string& data_dir) {
  const std::string dir = import_marks_dir(data_dir);
  if (!exists(fs, dir)) return Status::OK();
  STRATA_ASSIGN_OR_RETURN(auto names, fs.list_dir(dir));
  for (const auto& n : names) STRATA_TRY(fs.remove(path_join(dir, n)));
  STRATA_TRY(fs.sync_dir(dir));
  return fs.remove_dir(dir);
}

StreamImport import_stream(FileSystem& fs, const std::string& data_dir, node::Node* node,
                           server::OffsetStore* offsets, const RabbitStream& source,
                           const ImportOptions& o) {
  STRATA_ASSERT(o.dry_run || (node && offsets), "an import needs the node and its offset store");
  StreamImport r;
  r.name = source.name;
  r.dir = source.dir;
  auto failed = [&r](std::string why) {
    r.outcome = "failed";
    r.error = std::move(why);
    return r;
  };
  if (source.dir.empty()) return failed(source.problem);
  auto settings = server::settings_from_queue_arguments(source.arguments, &r.ignored_arguments);
  if (!settings.ok()) return failed("its arguments: " + settings.error().to_string());
  if (node) {
    const auto present = node->streams();
    if (std::find(present.begin(), present.end(), source.name) != present.end()) {
      r.outcome = "exists";
      return r;
    }
  }
  if (source.segments.empty()) return failed(fmt::format("{} holds no segment file", source.dir));
  r.segments = source.segments.size();
  ImportProgress progress{source.name, 0, 0};
  for (const auto& s : source.segments) {
    auto st = fs.stat(s);
    if (st.ok()) progress.bytes_total += st->size;
  }

  std::shared_ptr<log::StreamLog> log;
  bool marked = false;
  // A failure after the stream was created takes it away again: what the
  // node holds is whole streams only.
  auto undo = [&](std::string why) {
    if (log) {
      log.reset();
      if (Status s = node->delete_stream(source.name); !s.ok()) {
        why += fmt::format(
            " (and removing what was imported of it failed: {}; it is "
            "removed at the next import)",
            s.to_string());
        return failed(std::move(why));
      }
      (void)offsets->remove_stream(source.name);
      offsets->stream_created(source.name);
      why += " (nothing of it was kept)";
    }
    if (marked) (void)fs.remove(mark_path(data_dir, source.name));
    return failed(std::move(why));
  };
  auto create = [&](uint64_t first) -> Status {
    r.first_offset = r.next_offset = first;
    if (o.dry_run) return Status::OK();
    STRATA_TRY(create_dirs(fs, import_marks_dir(data_dir)));
    STRATA_TRY(write_file_atomic(fs, mark_path(data_dir, source.name), source.name));
    marked = true;
    STRATA_ASSIGN_OR_RETURN(log, node->create_stream(source.name, *settings, first));
    return Status::OK();
  };

  OsirisTracking state;
  uint64_t reported = 0;
  bool started = false;
  for (const auto& path : source.segments) {
    auto seg = OsirisSegment::open(fs, path);
    if (!seg.ok()) return undo(seg.error().to_string());
    IndexCheck index(fs, path, &r.notes);
    if (Status s = index.open_error(); !s.ok()) return undo(s.to_string());
    bool first_in_segment = true;
    for (;;) {
      auto next = (*seg)->next();
      if (!next.ok()) return undo(next.error().to_string());
      if (!*next) break;
      const OsirisChunk& c = **next;
      if (Status s = index.chunk(c); !s.ok()) return undo(s.to_string());
      if (!started) {
        if (Status s = create(c.chunk_id); !s.ok()) return undo(s.to_string());
        started = true;
      }
      const std::string where =
          fmt::format("{} at byte {} (chunk {})", path, c.position, c.chunk_id);
      if (c.chunk_id != r.next_offset) {
        return undo(
            fmt::format("{}: the previous chunk ends at offset {}: offsets must follow "
                        "each other",
                        where, r.next_offset));
      }
      if (first_in_segment && c.chunk_id != segment_offset(path)) {
        return undo(
            fmt::format("{}: the segment is named for offset {}", where, segment_offset(path)));
      }
      first_in_segment = false;
      // What the chunk tells of publishers and consumers.
      OsirisTracking t;
      TrackingForm form = TrackingForm::delta;
      if (c.type == OsirisChunkType::user) {
        auto parsed = parse_osiris_tracking(c.trailer, TrackingForm::delta);
        if (!parsed.ok()) return undo(where + ", its trailer: " + parsed.error().to_string());
        t = std::move(parsed).value();
        r.chunks += 1;
        r.messages += c.num_records;
      } else {
        // One simple entry: a u32 length, then the tracking entries.
        form = c.type == OsirisChunkType::tracking_snapshot ? TrackingForm::snapshot
                                                            : TrackingForm::delta;
        auto parsed = parse_osiris_tracking(c.data.substr(4), form);
        if (!parsed.ok()) return undo(where + ": " + parsed.error().to_string());
        t = std::move(parsed).value();
        r.tracking_chunks += 1;
      }
      apply_osiris_tracking(t, form, &state);
      if (!o.dry_run) {
        // The chunk's writers as strata keeps them: non-empty references.
        log::WriterSequences writers;
        for (const auto& [ref, seq] : t.sequences) {
          if (!ref.empty()) writers.emplace(ref, seq);
        }
        log::ImportedChunk ic;
        ic.first_offset = c.chunk_id;
        ic.timestamp_ms = c.timestamp_ms;
        ic.type = log::ChunkType(uint8_t(c.type));
        ic.writers = &writers;
        log::EntryBatch b;
        b.entries = c.data;
        b.num_entries = c.num_entries;
        b.num_records = c.num_records;
        b.imported = &ic;
        auto a = log->append_entries(b);
        if (!a.ok()) return undo(fmt::format("{}: appending it: {}", where, a.error().to_string()));
      }
      r.next_offset = c.next_offset();
      if (o.progress && r.bytes + (*seg)->position() - reported >= kProgressEveryBytes) {
        reported = r.bytes + (*seg)->position();
        progress.bytes_done = reported;
        o.progress(progress);
      }
    }
    if (Status s = index.end(path); !s.ok()) return undo(s.to_string());
    r.bytes += (*seg)->size();
  }
  if (!started) {
    // Every chunk was deleted by retention (or none was ever written): the
    // newest segment is named for the next offset.
    if (Status s = create(segment_offset(source.segments.back())); !s.ok()) {
      return undo(s.to_string());
    }
  }
  r.publishers = state.sequences.size();
  r.offsets = state.offsets.size();
  if (!state.timestamps.empty()) {
    r.notes.push_back(
        fmt::format("{} timestamp tracking entries not kept (the stream protocol "
                    "has no use for them)",
                    state.timestamps.size()));
  }
  if (o.dry_run) {
    r.outcome = "would_import";
    return r;
  }
  // What the node holds now, against what was read.
  // (Local retention may already have moved the older segments' offsets to
  // the remote tier: the log starts at or after the source.)
  if (log->committed_next() != r.next_offset || log->first_offset() < r.first_offset) {
    return undo(fmt::format("the imported log holds offsets [{}, {}), the source [{}, {})",
                            log->first_offset(), log->committed_next(), r.first_offset,
                            r.next_offset));
  }
  for (const auto& [ref, seq] : state.sequences) {
    if (ref.empty()) continue;
    const auto got = log->writer_sequence(ref);
    if (got != seq) {
      return undo(fmt::format("publisher {}: the imported log keeps sequence {}, the source {}",
                              ref, got ? std::to_string(*got) : "none", seq));
    }
  }
  for (const auto& [ref, off] : state.offsets) {
    if (Status s = offsets->store(source.name, ref, off); !s.ok()) {
      return undo(fmt::format("storing consumer {}'s offset {}: {}", ref, off, s.to_string()));
    }
  }
  progress.bytes_done = r.bytes;
  if (o.progress) o.progress(progress);
  r.outcome = "imported";
  return r;
}

}  // namespace strata::import
