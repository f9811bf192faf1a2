// The rules that judge a stream directory, in one place. Recovery
// (recovery.h) acts on the verdicts when it opens a log; `strata inspect`
// (inspect.h) reports them, saying what open would do. The rules are those
// of docs/formats/log-files.md, "Recovery (on open)"; the wording of every error and
// repair note is made here, so the two can never disagree.
//
// Pure, but for sealed_index_problem (one 56-byte read): the callers read
// the files (names, header bytes, chunk scans, indexes); these functions
// only judge what was read.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "log/index_file.h"
#include "log/log_files.h"
#include "log/segment_scan.h"

namespace strata::log {

// ---------------------------------------------------------- the directory

struct StreamListing {
  std::map<uint64_t, std::string> segments;  // first offset -> file name
  std::map<uint64_t, std::string> indexes;   // of existing segments only
  // Index files whose segment does not exist (a crash between retention's
  // two deletions): open removes them.
  std::vector<std::string> orphan_indexes;
  // `*.tmp`, left by an interrupted atomic write: open removes them.
  std::vector<std::string> leftovers;
  // Names that claim to be log files but are malformed: open fails, so a
  // stray file never hides data. Each error names the file.
  std::vector<Error> bad_names;
};

// Sorts the entries of a stream directory (names only, sorted or not).
StreamListing audit_listing(const std::vector<std::string>& names);

// A directory without segments is not a stream (open fails unless it may
// create one, see recovery.h).
Error no_segments_error(const std::string& dir);

// Each segment must start where the previous one ends; nullopt if it does.
std::optional<Error> contiguity_error(const std::string& dir, const std::string& prev_file,
                                      uint64_t prev_next, const std::string& name, uint64_t first);

// ------------------------------------------------------- a segment's header

struct HeaderVerdict {
  enum class Kind {
    valid,
    // Newest segment, header shorter than 24 bytes or all zero: a creation
    // that never reached the disk. Open re-initialises the file if no intact
    // chunk follows (audit_headerless_scan), else fails.
    absent,
    corrupt,  // open fails with `problem`
  };
  Kind kind = Kind::valid;
  std::optional<Error> problem;  // unless valid: what is wrong, naming the file
};

// `head`: the file's first min(size, 24) bytes. `name_first`: the first
// offset in the file name.
HeaderVerdict audit_header(BytesView head, uint64_t size, uint64_t name_first,
                           const std::string& path, bool newest);

// --------------------------------------------------------- damage and tails

// The rule that tells a torn tail from corruption is common/tail_damage.h
// (shared with the slotstore WAL): the audit gives it the scan's damage and
// the first intact chunk after it.

// What open does about a segment's chunks.
struct ScanVerdict {
  enum class Kind {
    clean,          // every byte is valid chunks
    truncate_tail,  // cut the torn tail at `valid_end`
    reinitialise,   // a headerless newest segment with nothing intact: rewrite its header
    corrupt,        // open fails with `problem`
  };
  Kind kind = Kind::clean;
  std::optional<Error> problem;  // corrupt: the error; truncate_tail: the damage found
  uint64_t valid_end = 0;        // truncate_tail: where the tail starts
};

// The newest segment, scanned with look_past_damage.
ScanVerdict audit_newest_scan(const ScanResult& scan);
// A newest segment whose header is absent, scanned (look_past_damage) from
// just after the header; nullopt scan: the file is no longer than a header.
ScanVerdict audit_headerless_scan(const std::optional<ScanResult>& scan, const std::string& path);
// A sealed segment's full scan: any damage is corruption.
ScanVerdict audit_sealed_scan(const ScanResult& scan);

// ------------------------------------------------------------------ indexes

// Why open cannot trust a sealed segment's index without scanning the
// segment ("" = it can as far as this shows): the index must be valid and
// end exactly at the end of the segment. If it can, open still checks the
// last record against its chunk header (sealed_index_last_record_problem).
std::string sealed_index_shape_problem(const IndexLoad& il, uint64_t segment_size,
                                       const std::string& segment_path);
// `header`: the kChunkHeaderSize bytes of the segment at `last.position`.
std::string sealed_index_last_record_problem(const IndexRecord& last, BytesView header,
                                             const std::string& segment_path);
// Both checks, reading the last record's chunk header from `segment`.
// Errors: only the read's.
Result<std::string> sealed_index_problem(File& segment, const std::string& segment_path,
                                         uint64_t segment_size, const IndexLoad& il);

// An index compared with a full scan of its segment.
struct IndexComparison {
  size_t matching = 0;                 // leading records equal to the scanned chunks
  std::optional<std::string> problem;  // how it disagrees; nullopt if it equals the scan
};
IndexComparison compare_index(const IndexLoad& il, std::span<const IndexRecord> scanned);

// What open does about the newest segment's index (it always has the scan).
struct IndexVerdict {
  enum class Kind {
    keep,
    repair,   // keep `keep_records` records, cut the rest, append the missing ones
    rebuild,  // rewrite it from the scan (missing, or its header is bad)
  };
  Kind kind = Kind::keep;
  size_t keep_records = 0;
  std::string reason;  // rebuild: why
};
// `il`: nullopt if the index file is missing. `index_size`: its file size.
IndexVerdict audit_newest_index(const std::optional<IndexLoad>& il, uint64_t index_size,
                                std::span<const IndexRecord> scanned);

}  // namespace strata::log
