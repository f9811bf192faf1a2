// The audit rules (log/audit.h) one by one, and the property they exist
// for: `strata inspect` says "open fails" exactly when open fails, in the
// words open fails with.
#include "log/audit.h"

#include <gtest/gtest.h>

#include "log/inspect.h"
#include "log/log_test_util.h"
#include "log/sync_mark.h"
#include "support/temp_dir.h"

namespace strata::log {
namespace {

using test::payload_for;

// Three chunks of 2 records at positions 24, 24+s, 24+2s.
std::vector<IndexRecord> chunks(size_t n) {
  std::vector<IndexRecord> v;
  uint64_t pos = kFileHeaderSize;
  for (size_t i = 0; i < n; ++i) {
    IndexRecord r;
    r.first_offset = 100 + 2 * i;
    r.timestamp_ms = 1000 + int64_t(i);
    r.epoch = 1;
    r.position = pos;
    r.num_records = 2;
    r.chunk_size = 80;
    pos += r.chunk_size;
    v.push_back(r);
  }
  return v;
}

IndexLoad loaded(std::vector<IndexRecord> recs, std::optional<Error> damage = std::nullopt) {
  IndexLoad il;
  il.header_valid = true;
  il.records = std::move(recs);
  il.damage = std::move(damage);
  return il;
}

// ------------------------------------------------------------ the listing

TEST(Audit, ListingSortsNamesAndFindsOrphansLeftoversAndBadNames) {
  StreamListing l =
      audit_listing({segment_file_name(0), index_file_name(0), segment_file_name(9),
                     index_file_name(5), "LOCK", index_file_name(9) + ".tmp", "12.segment"});
  EXPECT_EQ(l.segments.size(), 2u);
  EXPECT_EQ(l.segments.at(9), segment_file_name(9));
  EXPECT_EQ(l.indexes.size(), 1u);  // only those of existing segments
  EXPECT_EQ(l.orphan_indexes, std::vector<std::string>{index_file_name(5)});
  EXPECT_EQ(l.leftovers, std::vector<std::string>{index_file_name(9) + ".tmp"});
  ASSERT_EQ(l.bad_names.size(), 1u);
  EXPECT_NE(l.bad_names[0].message.find("12.segment"), std::string::npos);
}

TEST(Audit, ContiguityAndEmptyDirectory) {
  EXPECT_FALSE(contiguity_error("/d", "/d/a", 12, "b", 12));
  auto e = contiguity_error("/d", "/d/a", 12, "b", 24);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, Errc::corrupt);
  EXPECT_NE(e->message.find("/d/a ends at offset 12 but b starts at 24"), std::string::npos);
  EXPECT_EQ(no_segments_error("/d").code, Errc::not_found);
}

// ------------------------------------------------------------ headers

TEST(Audit, HeaderVerdicts) {
  using K = HeaderVerdict::Kind;
  Bytes good = encode_file_header(LogFileKind::segment, 7);
  EXPECT_EQ(audit_header(good, 100, 7, "/s", false).kind, K::valid);
  auto moved = audit_header(good, 100, 8, "/s", true);
  EXPECT_EQ(moved.kind, K::corrupt);
  EXPECT_NE(moved.problem->message.find("header says first offset 7, file name says 8"),
            std::string::npos);
  Bytes zero(kFileHeaderSize, '\0');
  // Short or zero: a creation that never completed, if it is the newest.
  EXPECT_EQ(audit_header(zero, 100, 7, "/s", true).kind, K::absent);
  EXPECT_EQ(audit_header(BytesView(good).substr(0, 10), 10, 7, "/s", true).kind, K::absent);
  auto sealed = audit_header(zero, 100, 7, "/s", false);
  EXPECT_EQ(sealed.kind, K::corrupt);
  EXPECT_NE(sealed.problem->message.find("sealed segment has no valid header"), std::string::npos);
  Bytes index_header = encode_file_header(LogFileKind::index, 7);
  EXPECT_EQ(audit_header(index_header, 100, 7, "/s", true).kind, K::corrupt);  // wrong magic
}

// ------------------------------------------------------------ damage

TEST(Audit, DamageFollowedByIntactDataIsCorruptionNotATornTail) {
  using K = ScanVerdict::Kind;
  ScanResult clean;
  EXPECT_EQ(audit_newest_scan(clean).kind, K::clean);
  ScanResult torn;
  torn.damage = Error(Errc::corrupt, "/s/x.segment position 100: truncated chunk header");
  torn.valid_end = 100;
  EXPECT_EQ(audit_newest_scan(torn).kind, K::truncate_tail);
  ScanResult damaged = torn;
  damaged.intact_after = IndexRecord{};
  damaged.intact_after->position = 300;
  damaged.intact_after->first_offset = 9;
  auto v = audit_newest_scan(damaged);
  ASSERT_EQ(v.kind, K::corrupt);
  EXPECT_NE(v.problem->message.find("not a torn tail"), std::string::npos) << v.problem->message;
  EXPECT_NE(v.problem->message.find("300"), std::string::npos) << v.problem->message;
}

TEST(Audit, NewestScanVerdicts) {
  using K = ScanVerdict::Kind;
  ScanResult clean;
  clean.chunks = chunks(3);
  clean.valid_end = clean.chunks.back().end_position();
  EXPECT_EQ(audit_newest_scan(clean).kind, K::clean);

  ScanResult torn = clean;
  torn.damage = Error(Errc::corrupt, "/s position 264: truncated chunk header");
  ScanVerdict v = audit_newest_scan(torn);
  EXPECT_EQ(v.kind, K::truncate_tail);
  EXPECT_EQ(v.valid_end, clean.valid_end);

  ScanResult middle = torn;
  IndexRecord after = chunks(5).back();
  middle.intact_after = after;
  v = audit_newest_scan(middle);
  EXPECT_EQ(v.kind, K::corrupt);
  EXPECT_NE(v.problem->message.find("truncated chunk header; an intact chunk (offset 108) "
                                    "follows at position " +
                                    std::to_string(after.position)),
            std::string::npos)
      << v.problem->message;
  EXPECT_NE(v.problem->message.find("not a torn tail but corruption (nothing is cut)"),
            std::string::npos);

  // Any damage in a sealed segment is corruption.
  EXPECT_EQ(audit_sealed_scan(clean).kind, K::clean);
  EXPECT_EQ(audit_sealed_scan(torn).kind, K::corrupt);
  EXPECT_NE(audit_sealed_scan(torn).problem->message.find("corruption in sealed segment"),
            std::string::npos);
}

TEST(Audit, HeaderlessNewestSegmentIsReinitialisedOnlyIfNothingIntactFollows) {
  using K = ScanVerdict::Kind;
  EXPECT_EQ(audit_headerless_scan(std::nullopt, "/s").kind, K::reinitialise);
  ScanResult garbage;
  garbage.damage = Error(Errc::corrupt, "bad");
  EXPECT_EQ(audit_headerless_scan(garbage, "/s").kind, K::reinitialise);
  ScanResult intact;
  intact.chunks = chunks(1);
  auto v = audit_headerless_scan(intact, "/s");
  EXPECT_EQ(v.kind, K::corrupt);
  EXPECT_NE(v.problem->message.find("/s position 0: segment header is missing or zero; an intact "
                                    "chunk (offset 100) follows at position 24"),
            std::string::npos)
      << v.problem->message;
  garbage.intact_after = chunks(2).back();
  EXPECT_EQ(audit_headerless_scan(garbage, "/s").kind, K::corrupt);
}

// ------------------------------------------------------------ indexes

TEST(Audit, SealedIndexIsTrustedOnlyIfItEndsAtTheSegmentsEnd) {
  auto recs = chunks(3);
  const uint64_t end = recs.back().end_position();
  EXPECT_EQ(sealed_index_shape_problem(loaded(recs), end, "/s"), "");
  EXPECT_NE(sealed_index_shape_problem(loaded(recs), end + 1, "/s"), "");
  EXPECT_NE(sealed_index_shape_problem(loaded({}), end, "/s"), "");
  EXPECT_EQ(sealed_index_shape_problem(loaded({}), kFileHeaderSize, "/s"), "");
  EXPECT_EQ(sealed_index_shape_problem(loaded(recs, Error(Errc::corrupt, "rot")), end, "/s"),
            "rot");
}

TEST(Audit, SealedIndexLastRecordMustMatchItsChunkHeader) {
  ChunkHeader h;
  h.first_offset = 40;
  h.num_entries = h.num_records = 2;
  h.timestamp_ms = 5;
  h.epoch = 3;
  h.data_len = 24;
  Bytes hb(kChunkHeaderSize, '\0');
  encode_chunk_header(h, u8(hb.data()));
  IndexRecord last = index_record_for(h, 500);
  EXPECT_EQ(sealed_index_last_record_problem(last, hb, "/s"), "");
  IndexRecord wrong = last;
  wrong.timestamp_ms = 6;
  EXPECT_NE(sealed_index_last_record_problem(wrong, hb, "/s").find("does not match"),
            std::string::npos);
  hb[3] ^= 1;  // the header no longer decodes
  EXPECT_NE(sealed_index_last_record_problem(last, hb, "/s"), "");
}

TEST(Audit, IndexComparedWithAScan) {
  auto scanned = chunks(3);
  EXPECT_FALSE(compare_index(loaded(scanned), scanned).problem);
  auto lag = compare_index(loaded(chunks(2)), scanned);
  EXPECT_EQ(lag.matching, 2u);
  EXPECT_EQ(*lag.problem, "index lags: 2 of 3 chunks indexed");
  auto past = compare_index(loaded(chunks(4)), scanned);
  EXPECT_EQ(past.matching, 3u);
  EXPECT_NE(past.problem->find("points past the valid end"), std::string::npos);
  auto other = chunks(3);
  other[1].timestamp_ms = 0;
  auto mismatch = compare_index(loaded(other), scanned);
  EXPECT_EQ(mismatch.matching, 1u);
  EXPECT_NE(mismatch.problem->find("index record 1 does not match"), std::string::npos);
}

TEST(Audit, NewestIndexIsKeptRepairedOrRebuilt) {
  using K = IndexVerdict::Kind;
  auto scanned = chunks(3);
  const uint64_t full = kFileHeaderSize + 3 * kIndexRecordSize;
  EXPECT_EQ(audit_newest_index(loaded(scanned), full, scanned).kind, K::keep);
  auto lag = audit_newest_index(loaded(chunks(2)), full - kIndexRecordSize, scanned);
  EXPECT_EQ(lag.kind, K::repair);
  EXPECT_EQ(lag.keep_records, 2u);
  // A torn record after the three good ones: cut back.
  auto torn = audit_newest_index(loaded(scanned, Error(Errc::corrupt, "torn")), full + 7, scanned);
  EXPECT_EQ(torn.kind, K::repair);
  EXPECT_EQ(torn.keep_records, 3u);
  EXPECT_EQ(audit_newest_index(std::nullopt, 0, scanned).kind, K::rebuild);
  IndexLoad bad_header;
  bad_header.damage = Error(Errc::corrupt, "wrong magic");
  auto rebuild = audit_newest_index(bad_header, 100, scanned);
  EXPECT_EQ(rebuild.kind, K::rebuild);
  EXPECT_EQ(rebuild.reason, "wrong magic");
}

// ------------------------------------------------------------ inspect vs open

// Damaged stream directories: inspect must say "open fails" exactly when a
// writer's open fails, quoting the error open gives.
struct InspectAgreesWithOpen : test::StreamDirTest {
  void build(int chunks) { StreamDirTest::build(chunks, 2); }  // segments [0,8) [8,16) ...

  // Inspects, then opens for writing; returns what inspect reported.
  std::vector<std::string> check(const std::string& scenario, bool expect_open_ok) {
    InspectOptions io;
    auto rep = inspect_stream(fs, dir, io);
    EXPECT_TRUE(rep.ok()) << scenario;
    if (!rep.ok()) return {};
    std::string all;
    bool says_fails = false;
    for (const auto& p : rep->problems) {
      all += "\n  " + p;
      if (p.find("open fails") != std::string::npos || p.find("and fails)") != std::string::npos) {
        says_fails = true;
      }
    }
    auto opened = StreamLog::open(dir, opts());
    EXPECT_EQ(opened.ok(), expect_open_ok)
        << scenario << (opened.ok() ? "" : opened.error().to_string());
    EXPECT_EQ(says_fails, !opened.ok())
        << scenario << ": inspect and open disagree; open: "
        << (opened.ok() ? std::string("ok") : opened.error().to_string()) << "; inspect:" << all;
    if (!opened.ok()) {
      bool quoted = false;
      for (const auto& p : rep->problems) {
        quoted = quoted || p.find(opened.error().message) != std::string::npos;
      }
      EXPECT_TRUE(quoted) << scenario << ": no problem quotes '" << opened.error().message
                          << "':" << all;
    }
    return rep->problems;
  }
};

TEST_F(InspectAgreesWithOpen, CleanLog) {
  build(6);
  EXPECT_TRUE(check("clean", true).empty());
}

TEST_F(InspectAgreesWithOpen, TornTail) {
  build(6);
  auto recs = index_of(8);
  truncate(seg(8), recs.back().position + 20);
  auto p = check("torn tail", true);
  ASSERT_FALSE(p.empty());
  EXPECT_NE(p[0].find("open truncates it"), std::string::npos) << p[0];
}

TEST_F(InspectAgreesWithOpen, DamageInTheMiddleOfTheNewestSegment) {
  build(7);
  flip(seg(8), index_of(8)[1].position + kChunkHeaderSize + 1);
  check("corrupt middle", false);
}

TEST_F(InspectAgreesWithOpen, SealedDamageBehindATrustedIndex) {
  build(6);
  flip(seg(0), index_of(0)[2].position + kChunkHeaderSize + 1);
  check("sealed damage, trusted index", true);
}

TEST_F(InspectAgreesWithOpen, SealedDamageBehindAnUntrustedIndex) {
  build(6);
  flip(seg(0), index_of(0)[1].position + kChunkHeaderSize + 1);
  ASSERT_TRUE(fs.remove(idx(0)).ok());
  check("sealed damage, missing index", false);
}

TEST_F(InspectAgreesWithOpen, TruncatedSealedSegment) {
  build(6);
  truncate(seg(0), size_of(seg(0)) - 10);
  check("truncated sealed", false);
}

TEST_F(InspectAgreesWithOpen, HeaderlessNewestSegment) {
  build(5);
  truncate(seg(8), 0);
  ASSERT_TRUE(fs.remove(idx(8)).ok());
  auto p = check("zero-length newest", true);
  ASSERT_FALSE(p.empty());
  EXPECT_NE(p[0].find("re-initialises"), std::string::npos) << p[0];
}

TEST_F(InspectAgreesWithOpen, ZeroedHeaderWithIntactChunksAfterIt) {
  build(5);
  write_at(seg(8), 0, std::string(kFileHeaderSize, '\0'));
  check("zeroed header, intact chunks", false);
}

TEST_F(InspectAgreesWithOpen, BadHeaderOfTheNewestSegment) {
  build(5);
  flip(seg(8), 2);
  check("bad newest header", false);
}

TEST_F(InspectAgreesWithOpen, EmptySealedSegmentFile) {
  build(10);
  truncate(seg(8), 0);
  check("zero-length sealed", false);
}

TEST_F(InspectAgreesWithOpen, RenamedSegment) {
  build(2);
  ASSERT_TRUE(fs.rename(seg(0), seg(5)).ok());
  ASSERT_TRUE(fs.rename(idx(0), idx(5)).ok());
  check("renamed", false);
}

TEST_F(InspectAgreesWithOpen, MalformedName) {
  build(2);
  write_at(path_join(dir, "junk.segment"), 0, "x");
  check("malformed name", false);
}

TEST_F(InspectAgreesWithOpen, MissingMiddleSegment) {
  build(10);
  ASSERT_TRUE(fs.remove(seg(8)).ok());
  check("gap", false);
}

TEST_F(InspectAgreesWithOpen, IndexesThatOpenRepairsOrRemoves) {
  build(10);
  truncate(idx(16), size_of(idx(16)) - kIndexRecordSize);            // newest lags
  write_at(idx(40), 0, encode_file_header(LogFileKind::index, 40));  // orphan
  write_at(idx(0) + ".tmp", 0, "leftover");
  auto p = check("index repairs", true);
  EXPECT_EQ(p.size(), 3u);
  EXPECT_FALSE(exists(fs, idx(0) + ".tmp"));
  EXPECT_FALSE(exists(fs, idx(40)));
}

TEST_F(InspectAgreesWithOpen, SealedIndexPointingPastTheSegment) {
  build(6);
  add_index_record_past_the_end(0);
  auto p = check("sealed index past the end", true);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(p[0].find("open rebuilds it"), std::string::npos) << p[0];
}

// Under fsync=never, segments at or above the sync mark may be torn by a
// power cut while later ones exist; open cuts there and drops the rest, and
// inspect must say so (not "open fails") and end the stream where open does.
struct InspectWithSyncMark : InspectAgreesWithOpen {
  // Returns inspect's next offset, and checks it is the reopened log's.
  uint64_t next_offsets_agree(const std::string& scenario) {
    auto rep = inspect_stream(fs, dir, InspectOptions{});
    EXPECT_TRUE(rep.ok());
    auto opened = StreamLog::open(dir, opts());
    EXPECT_TRUE(opened.ok()) << scenario;
    if (!rep.ok() || !opened.ok()) return 0;
    EXPECT_EQ(rep->next_offset, (*opened)->committed_next()) << scenario;
    return rep->next_offset;
  }
};

TEST_F(InspectWithSyncMark, TornMaybeUnsyncedSegmentIsCutAndLaterOnesDropped) {
  build(10);  // segments [0,8) [8,16) [16,20)
  ASSERT_TRUE(write_sync_mark(fs, dir, 8).ok());
  auto recs = index_of(8);
  truncate(seg(8), recs[2].position + 20);
  auto rep = inspect_stream(fs, dir, InspectOptions{});
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(rep->synced_below, std::optional<uint64_t>(8));
  ASSERT_EQ(rep->segments.size(), 3u);
  EXPECT_FALSE(rep->segments[0].maybe_unsynced);
  EXPECT_TRUE(rep->segments[1].maybe_unsynced);
  EXPECT_TRUE(rep->segments[1].cut_by_open);
  EXPECT_TRUE(rep->segments[2].dropped_by_open);
  EXPECT_EQ(rep->next_offset, 12u);
  auto p = check("torn maybe-unsynced segment", true);
  ASSERT_GE(p.size(), 2u);
  EXPECT_NE(p[0].find("drops every later segment"), std::string::npos) << p[0];
  EXPECT_NE(p.back().find("open drops it"), std::string::npos) << p.back();
}

TEST_F(InspectWithSyncMark, MaybeUnsyncedSegmentThatLostWholeChunks) {
  build(10);
  ASSERT_TRUE(write_sync_mark(fs, dir, 8).ok());
  // Cut at a chunk boundary: the segment looks intact but ends before its
  // successor begins.
  truncate(seg(8), index_of(8)[2].position);
  ASSERT_TRUE(fs.remove(idx(8)).ok());
  auto p = check("maybe-unsynced segment short of its successor", true);
  ASSERT_FALSE(p.empty());
  bool says_drops = false;
  for (const auto& x : p)
    says_drops = says_drops || x.find("every later segment") != std::string::npos;
  EXPECT_TRUE(says_drops);
}

TEST_F(InspectWithSyncMark, NextOffsetIsWhereOpenEndsTheLog) {
  build(10);
  ASSERT_TRUE(write_sync_mark(fs, dir, 8).ok());
  truncate(seg(8), index_of(8)[1].position + 30);
  EXPECT_EQ(next_offsets_agree("cut at the second chunk"), 10u);
}

TEST_F(InspectWithSyncMark, BelowTheMarkATruncatedSegmentStillFailsOpen) {
  build(10);
  ASSERT_TRUE(write_sync_mark(fs, dir, 16).ok());
  truncate(seg(8), size_of(seg(8)) - 10);
  ASSERT_TRUE(fs.remove(idx(8)).ok());
  check("truncated below the mark", false);
}

}  // namespace
}  // namespace strata::log
