// The DETS file reader against real files written by Erlang/OTP: clean,
// not closed properly (halted and kill -9'd VMs), repaired by DETS, and
// damaged copies. A damaged file must fail with an error naming the file and
// a byte position — or, where DETS itself has no way to notice (a changed
// value byte inside an object), read with only that row changed. Never a
// crash, never fewer rows.
#include "raftmeta/dets/dets_file.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "common/endian.h"
#include "common/fault_fs.h"
#include "common/random.h"
#include "raftmeta/dets/dets_format.h"
#include "raftmeta/dets/ra_meta_rows.h"
#include "raftmeta/dets_test_util.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace strata::raftmeta::dets {
namespace {

using test::read_bytes;
using test::run_dets_gen;
using test::sorted_lines;
using test::sorted_row_lines;

uint32_t be32(const Bytes& b, uint64_t pos) {
  return get_be32(u8(b.data() + pos));
}

// Collections and slot entries of a file, found by walking its hash table
// (test-side, to aim damage; the reader has its own walk).
struct Layout {
  std::vector<uint64_t> parts, segments;
  std::vector<uint64_t> used_slot_entries, empty_slot_entries;
  std::vector<std::pair<uint64_t, uint32_t>> collections;  // position, size
};

Layout layout_of(const Bytes& f) {
  Layout l;
  for (uint32_t p = 0; p < kSegmentArrayParts; ++p) {
    const uint32_t part = be32(f, kSegmentArrayPos + 4 * p);
    if (part == 0) continue;
    l.parts.push_back(part);
    for (uint32_t s = 0; s < kSegmentsPerPart; ++s) {
      const uint32_t seg = be32(f, part + 4 * s);
      if (seg == 0) continue;
      l.segments.push_back(seg);
      for (uint32_t j = 0; j < kSlotsPerSegment; ++j) {
        const uint64_t e = seg + 8 * j;
        if (be32(f, e + 4) == 0) {
          l.empty_slot_entries.push_back(e);
        } else {
          l.used_slot_entries.push_back(e);
          l.collections.emplace_back(be32(f, e + 4), be32(f, e));
        }
      }
    }
  }
  std::sort(l.collections.begin(), l.collections.end());
  return l;
}

// A file held in memory (FaultFileSystem), damaged and re-read many times.
class MemDets {
 public:
  explicit MemDets(Bytes original) : original_(std::move(original)) {
    auto f = fs_.open(kPath, OpenOptions::create_truncate());
    EXPECT_TRUE(f.ok());
    EXPECT_TRUE((*f)->write_at(0, original_).ok());
  }
  static constexpr const char* kPath = "/meta.dets";

  const Bytes& original() const { return original_; }

  // Replaces the file's contents.
  void set(const Bytes& data) {
    auto f = fs_.open(kPath, OpenOptions::create_truncate());
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->write_at(0, data).ok());
  }

  struct Outcome {
    bool ok = false;
    Error error;
    std::vector<std::string> rows;
  };
  Outcome read() {
    Outcome o;
    auto rows = read_ra_meta(fs_, kPath);
    o.ok = rows.ok();
    if (o.ok) {
      o.rows = sorted_row_lines(*rows);
    } else {
      o.error = rows.error();
    }
    return o;
  }

 private:
  FaultFileSystem fs_;
  Bytes original_;
};

// Rows present in `a` but not in `b` (both sorted).
size_t rows_missing(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::string> d;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(d));
  return d.size();
}

// The property every damaged copy must have.
enum class Allowed { error_only, error_or_same, error_or_one_row_changed };

void expect_loud(const MemDets::Outcome& o, const std::string& what) {
  ASSERT_FALSE(o.ok) << what << ": read succeeded";
  EXPECT_EQ(o.error.message.rfind(std::string(MemDets::kPath) + ": byte ", 0), 0u)
      << what << ": " << o.error.message;
}

// Returns true if the damaged copy read successfully.
bool check_damage(MemDets& m, const Bytes& damaged, const std::vector<std::string>& rows,
                  Allowed allowed, const std::string& what) {
  m.set(damaged);
  const MemDets::Outcome o = m.read();
  if (!o.ok) {
    EXPECT_EQ(o.error.message.rfind(std::string(MemDets::kPath) + ": byte ", 0), 0u)
        << what << ": " << o.error.message;
    return false;
  }
  EXPECT_NE(allowed, Allowed::error_only) << what << ": damage went unnoticed";
  EXPECT_EQ(o.rows.size(), rows.size()) << what << ": row count changed";
  const size_t changed = rows_missing(rows, o.rows);
  EXPECT_LE(changed, allowed == Allowed::error_or_same ? 0u : 1u) << what;
  return true;
}

class DetsFileTest : public ::testing::Test {
 protected:
  std::string sub(const std::string& name) const { return dir_.sub(name); }

  // A small clean Ra table and its rows as Erlang wrote them.
  void make_small(const std::string& path, int n, const std::string& finish = "close") {
    ASSERT_EQ(
        run_dets_gen("ra", {"file=" + path, "expected=" + path + ".expected",
                            "n=" + std::to_string(n), "seed=5", "churn=true", "finish=" + finish}),
        "");
  }

  strata::test::TempDir dir_;
};

TEST_F(DetsFileTest, EmptyTableReadsAsNoObjects) {
  const std::string f = sub("empty.dets");
  ASSERT_EQ(run_dets_gen("empty", {"file=" + f}), "");
  auto r = DetsReader::open(posix_fs(), f);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  const Info& info = (*r)->info();
  EXPECT_TRUE(info.closed_properly);
  EXPECT_EQ(info.object_count, 0u);
  EXPECT_EQ(info.collection_count, 0u);
  EXPECT_EQ(info.slot_count, 256u);
  EXPECT_EQ(info.keypos, 1u);
  int calls = 0;
  ASSERT_TRUE((*r)->for_each([&](const Object&) {
                    ++calls;
                    return Status::OK();
                  })
                  .ok());
  EXPECT_EQ(calls, 0);
}

// Objects of every size up to 3 MB (collections much larger than the 1 MiB
// read window), compared with what Erlang inserted.
TEST_F(DetsFileTest, GenericObjectsOfAllSizesMatchErlang) {
  for (const auto& [n, max] : {std::pair{400, 3000}, std::pair{6, 3000000}}) {
    const std::string f = sub("generic" + std::to_string(n) + ".dets");
    ASSERT_EQ(
        run_dets_gen("generic", {"file=" + f, "expected=" + f + ".txt", "n=" + std::to_string(n),
                                 "max_payload=" + std::to_string(max), "seed=9"}),
        "");
    auto r = DetsReader::open(posix_fs(), f);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ((*r)->info().object_count, uint64_t(n));
    std::vector<std::string> got;
    ASSERT_TRUE((*r)->for_each([&](const Object& o) -> Status {
                      const auto& e = o.term.tuple()->elements;
                      EXPECT_EQ(e.size(), 4u);
                      const Bytes& payload = e[1].binary()->bytes;
                      const uint8_t first = uint8_t(payload[0]);
                      EXPECT_EQ(payload.find_first_not_of(char(first)), Bytes::npos);
                      got.push_back("{" + etf::to_string(e[0]) + "," +
                                    std::to_string(payload.size()) + "," + std::to_string(first) +
                                    "," + etf::to_string(e[2]) + "," + etf::to_string(e[3]) + "}");
                      return Status::OK();
                    })
                    .ok());
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, sorted_lines(f + ".txt"));
  }
}

TEST_F(DetsFileTest, CleanFileInfoAgreesWithItsHeader) {
  const std::string f = sub("t.dets");
  make_small(f, 3000);
  auto r = DetsReader::open(posix_fs(), f);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  const Info& info = (*r)->info();
  const Header& h = (*r)->header();
  EXPECT_TRUE(info.closed_properly);
  EXPECT_EQ(info.object_count, h.no_objects);
  EXPECT_EQ(info.object_count, sorted_lines(f + ".expected").size());
  EXPECT_EQ(info.slot_count, h.next);
  EXPECT_GT(info.collection_count, 0u);
  EXPECT_LE(info.collection_count, info.object_count);
  EXPECT_EQ(info.file_size, std::filesystem::file_size(f));
  EXPECT_TRUE(h.has_md5);
}

// Ra's node crashed: DETS never closed the file. Every row Erlang had
// flushed is read, the same rows DETS's own repair recovers; the repaired
// file (DETS's other layout, written by its repair) reads the same too.
TEST_F(DetsFileTest, NotClosedProperlyReadsWhatDetsRepairRecovers) {
  const std::string f = sub("dirty.dets");
  ASSERT_EQ(run_dets_gen("ra", {"file=" + f, "expected=" + f + ".expected", "n=3000", "seed=6",
                                "churn=true", "extra_after_churn=2000", "finish=halt"}),
            "");
  auto r = RaMetaReader::open(posix_fs(), f);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_FALSE((*r)->info().closed_properly);
  auto rows = read_ra_meta(posix_fs(), f);
  ASSERT_TRUE(rows.ok()) << rows.error().to_string();
  const auto expected = sorted_lines(f + ".expected");
  EXPECT_EQ(sorted_row_lines(*rows), expected);

  const std::string copy = sub("repaired.dets");
  std::filesystem::copy_file(f, copy);
  ASSERT_EQ(run_dets_gen("dump", {"file=" + copy, "out=" + copy + ".dump"}), "");
  EXPECT_EQ(sorted_lines(copy + ".dump"), expected);
  auto repaired = RaMetaReader::open(posix_fs(), copy);
  ASSERT_TRUE(repaired.ok()) << repaired.error().to_string();
  EXPECT_TRUE((*repaired)->info().closed_properly);
  auto rows2 = read_ra_meta(posix_fs(), copy);
  ASSERT_TRUE(rows2.ok()) << rows2.error().to_string();
  EXPECT_EQ(sorted_row_lines(*rows2), expected);
}

// DETS added segments after it last wrote the header, whose `next` now
// undercounts the slots in use: rows re-hashed into the new segments are
// read all the same (a reader trusting `next` would drop them silently).
TEST_F(DetsFileTest, TableThatGrewAfterItsLastHeaderWriteReadsCompletely) {
  const std::string f = sub("grown.dets");
  ASSERT_EQ(run_dets_gen("grown", {"file=" + f, "expected=" + f + ".expected", "n=1000"}), "");
  auto r = DetsReader::open(posix_fs(), f);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_FALSE((*r)->info().closed_properly);
  EXPECT_GT((*r)->info().slot_count, (*r)->header().next);
  auto rows = read_ra_meta(posix_fs(), f);
  ASSERT_TRUE(rows.ok()) << rows.error().to_string();
  const auto expected = sorted_lines(f + ".expected");
  EXPECT_EQ(sorted_row_lines(*rows), expected);
  ASSERT_EQ(run_dets_gen("dump", {"file=" + f, "out=" + f + ".dump"}), "");
  EXPECT_EQ(sorted_lines(f + ".dump"), expected);
}

// The VM is killed with SIGKILL after its writes reached the file.
TEST_F(DetsFileTest, KilledVmLeavesAFileThatReadsCompletely) {
  const std::string f = sub("killed.dets");
  auto p = strata::test::Process::spawn(
      {"erl", "-noshell", "-pa", STRATA_DETS_BEAM_DIR, "-eval", "dets_gen:main()", "-extra", "ra",
       "file=" + f, "expected=" + f + ".expected", "n=2000", "seed=8", "churn=true",
       "extra_after_churn=500", "finish=wait"},
      dir_.path());
  ASSERT_TRUE(p.wait_for_output("ready", std::chrono::seconds(60)).has_value())
      << p.stderr_text() << " (is erl installed and the helper built?)";
  p.kill(9);
  p.wait();
  auto rows = read_ra_meta(posix_fs(), f);
  ASSERT_TRUE(rows.ok()) << rows.error().to_string();
  auto r = DetsReader::open(posix_fs(), f);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE((*r)->info().closed_properly);
  EXPECT_EQ(sorted_row_lines(*rows), sorted_lines(f + ".expected"));
}

// A collection that no slot points to is a row DETS's repair would bring
// back (or a stale copy of one): reading on would silently drop or pick a
// version, so the reader stops, in clean and in not-closed files alike.
TEST_F(DetsFileTest, CollectionNoSlotReachesFailsLoudly) {
  for (const std::string finish : {"close", "halt"}) {
    const std::string f = sub("orphan-" + finish + ".dets");
    make_small(f, 50, finish);
    MemDets m(read_bytes(f));
    const Layout l = layout_of(m.original());
    ASSERT_FALSE(l.used_slot_entries.empty());
    Bytes d = m.original();
    std::fill_n(d.begin() + long(l.used_slot_entries[0]), 8, '\0');
    m.set(d);
    const auto o = m.read();
    expect_loud(o, finish);
    EXPECT_NE(o.error.message.find("is not referenced by any slot"), std::string::npos)
        << o.error.message;
    if (finish == "halt") {
      EXPECT_NE(o.error.message.find("DETS's repair would bring this back"), std::string::npos)
          << o.error.message;
    }
  }
}

TEST_F(DetsFileTest, SlotPointingAtFreedOrSharedSpaceFailsLoudly) {
  const std::string f = sub("t.dets");
  make_small(f, 50);
  MemDets m(read_bytes(f));
  const Layout l = layout_of(m.original());
  // The collection's status says FREE.
  Bytes d = m.original();
  put_be32(u8(d.data() + l.collections[0].first + 4), kFree);
  m.set(d);
  auto o = m.read();
  expect_loud(o, "freed");
  EXPECT_NE(o.error.message.find("points at freed space"), std::string::npos) << o.error.message;
  // An empty slot now points at another slot's collection.
  d = m.original();
  std::copy_n(m.original().begin() + long(l.used_slot_entries[0]), 8,
              d.begin() + long(l.empty_slot_entries[0]));
  m.set(d);
  o = m.read();
  expect_loud(o, "shared");
  EXPECT_NE(o.error.message.find("starts inside"), std::string::npos) << o.error.message;
}

// A set holds each key once; two objects with one key (here: a uid edited
// into another row's uid) are refused rather than one of them dropped.
TEST_F(DetsFileTest, KeyStoredTwiceFailsLoudly) {
  const std::string f = sub("meta.dets");
  ASSERT_EQ(run_dets_gen("fixed", {"file=" + f, "expected=" + f + ".expected"}), "");
  Bytes d = read_bytes(f);
  const size_t at = d.find("tuple");
  ASSERT_NE(at, Bytes::npos);
  ASSERT_EQ(d.find("tuple", at + 1), Bytes::npos);
  d.replace(at, 5, "plain");
  MemDets m(d);
  const auto o = m.read();
  expect_loud(o, "duplicate");
  EXPECT_NE(o.error.message.find("key <<112,108,97,105,110>> is stored twice"), std::string::npos)
      << o.error.message;
}

TEST_F(DetsFileTest, BagTableIsRefused) {
  const std::string f = sub("bag.dets");
  ASSERT_EQ(run_dets_gen("bag", {"file=" + f}), "");
  auto r = DetsReader::open(posix_fs(), f);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), Errc::schema_mismatch);
  EXPECT_NE(r.error().message.find(f + ": byte 12: DETS table of type bag"), std::string::npos)
      << r.error().message;
}

TEST_F(DetsFileTest, NonDetsFilesAreRefused) {
  Random rng(strata::test::test_seed(3));
  Bytes random(65536, '\0');
  for (auto& c : random) c = char(rng.uniform(256));
  const std::vector<std::pair<std::string, Bytes>> cases = {
      {"empty", ""},
      {"three bytes", "abc"},
      {"text", "%% not a dets file\n{ok, 1}.\n"},
      {"random", random},
      {"term_to_binary", Bytes("\x83\x68\x02\x61\x01\x61\x02", 7)},
  };
  for (const auto& [what, data] : cases) {
    MemDets m(data);
    const auto o = m.read();
    expect_loud(o, what);
    EXPECT_EQ(o.error.code, Errc::corrupt) << what;
    EXPECT_NE(o.error.message.find("not a DETS file"), std::string::npos) << o.error.message;
  }
  // The right magic but far too short.
  Bytes tiny(100, '\0');
  put_be32(u8(tiny.data() + kCookiePos), kMagic);
  MemDets m(tiny);
  const auto o = m.read();
  expect_loud(o, "tiny");
  EXPECT_NE(o.error.message.find("truncated"), std::string::npos) << o.error.message;
}

TEST_F(DetsFileTest, OtherFormatVersionIsUnsupported) {
  const std::string f = sub("t.dets");
  make_small(f, 10);
  Bytes d = read_bytes(f);
  put_be32(u8(d.data() + kVersionPos), 8);
  MemDets m(d);
  const auto o = m.read();
  ASSERT_FALSE(o.ok);
  EXPECT_EQ(o.error.code, Errc::unsupported_version);
  EXPECT_NE(o.error.message.find("byte 16: DETS format version 8"), std::string::npos)
      << o.error.message;
}

TEST_F(DetsFileTest, EveryTruncationFailsLoudly) {
  for (const std::string finish : {"close", "halt"}) {
    const std::string f = sub("t-" + finish + ".dets");
    make_small(f, 60, finish);
    MemDets m(read_bytes(f));
    const size_t size = m.original().size();
    const Layout l = layout_of(m.original());
    // A dirty file may end in free space that no block uses; cutting that
    // loses nothing. Anything shorter than the last block's data must fail.
    uint64_t data_end = 0;
    for (const auto& [pos, sz] : l.collections) data_end = std::max<uint64_t>(data_end, pos + sz);
    for (uint64_t s : l.segments) data_end = std::max<uint64_t>(data_end, s + kSegmentBytes);
    for (size_t n = 0; n < size; n += (n < 400 ? 1 : 3)) {
      const Bytes cut = m.original().substr(0, n);
      const std::string what = finish + " cut at " + std::to_string(n);
      check_damage(m, cut, sorted_lines(f + ".expected"),
                   finish == "close" || n < data_end ? Allowed::error_only : Allowed::error_or_same,
                   what);
    }
  }
}

TEST_F(DetsFileTest, EveryHeaderByteFlipIsCaughtOrHarmless) {
  const std::string f = sub("t.dets");
  make_small(f, 40);
  MemDets m(read_bytes(f));
  const auto rows = sorted_lines(f + ".expected");
  int harmless = 0;
  for (uint64_t pos = 0; pos < kBase; ++pos) {
    for (uint8_t mask : {0x01, 0x80}) {
      Bytes d = m.original();
      d[pos] ^= char(mask);
      // Bytes DETS's header does not use (reserved) or that only change the
      // path taken (closed flag 1 -> 0) may read unchanged; nothing else.
      const bool may_be_harmless =
          (pos >= kFlBasePos + 4 && pos < kHeaderEnd) ||
          (pos == kClosedProperlyPos + 3 && mask == 1) ||
          pos >= kSegmentArrayPos + 4;  // unused segment array entries: see below
      harmless +=
          check_damage(m, d, rows, may_be_harmless ? Allowed::error_or_same : Allowed::error_only,
                       "header byte " + std::to_string(pos) + " ^ " + std::to_string(mask));
    }
  }
  // Only the 124 reserved bytes and the closed flag read unchanged; a set
  // bit in an unused segment array entry is caught (entry after an empty one).
  EXPECT_EQ(harmless, 2 * 124 + 1);
}

TEST_F(DetsFileTest, EverySlotTableByteFlipIsCaught) {
  for (const std::string finish : {"close", "halt"}) {
    const std::string f = sub("t-" + finish + ".dets");
    make_small(f, 40, finish);
    MemDets m(read_bytes(f));
    const auto rows = sorted_lines(f + ".expected");
    const Layout l = layout_of(m.original());
    ASSERT_EQ(l.parts.size(), 1u);
    std::vector<uint64_t> starts = l.parts;
    starts.insert(starts.end(), l.segments.begin(), l.segments.end());
    for (uint64_t start : starts) {
      for (uint64_t pos = start; pos < start + 2048; ++pos) {
        Bytes d = m.original();
        d[pos] ^= char(1u << (pos % 8));
        check_damage(m, d, rows, Allowed::error_only,
                     finish + " table byte " + std::to_string(pos));
      }
    }
  }
}

// DETS has no checksum on objects: a flipped bit inside a uid or a number
// is a different, valid row (DETS reads it too). Everything structural —
// collection size and status, object sizes, term tags and lengths — is
// caught, and no flip ever loses a row.
TEST_F(DetsFileTest, ObjectByteFlipsAreCaughtOrChangeOneRow) {
  const std::string f = sub("t.dets");
  make_small(f, 40);
  MemDets m(read_bytes(f));
  const auto rows = sorted_lines(f + ".expected");
  const Layout l = layout_of(m.original());
  int caught = 0, changed = 0;
  for (const auto& [start, size] : l.collections) {
    // The collection header, each object's size word and version byte.
    std::vector<uint64_t> structural_bytes;
    for (uint64_t p = start; p < start + kCollectionHeaderSize; ++p) structural_bytes.push_back(p);
    for (uint64_t o = start + kCollectionHeaderSize; o < start + size; o += be32(m.original(), o)) {
      for (uint64_t p = o; p < o + 5; ++p) structural_bytes.push_back(p);
    }
    for (uint64_t pos = start; pos < start + size; ++pos) {
      Bytes d = m.original();
      d[pos] ^= char(1u << (pos % 8));
      const bool structural = std::find(structural_bytes.begin(), structural_bytes.end(), pos) !=
                              structural_bytes.end();
      const bool read = check_damage(
          m, d, rows, structural ? Allowed::error_only : Allowed::error_or_one_row_changed,
          "object byte " + std::to_string(pos));
      (read ? changed : caught) += 1;
    }
  }
  EXPECT_GT(caught, 0);
  EXPECT_GT(changed, 0);
}

// The free lists are the allocator's state, not data: a changed address or
// buddy size that still describes free space (not overlapping a block in
// use) changes nothing that is read. Their structure and the trailer are
// checked.
TEST_F(DetsFileTest, FreeListAndTrailerFlipsAreCaughtOrHarmless) {
  const std::string f = sub("t.dets");
  make_small(f, 300);
  MemDets m(read_bytes(f));
  const auto rows = sorted_lines(f + ".expected");
  const Bytes& o = m.original();
  const uint64_t fl = be32(o, kFreelistsPointerPos);
  ASSERT_GT(o.size() - fl, 16u);
  std::vector<bool> address_byte(o.size(), false);
  for (uint64_t c = fl; be32(o, c + 8) != kEndFree; c += be32(o, c)) {
    for (uint64_t p = c + 8; p < c + be32(o, c); ++p) address_byte[p] = true;
  }
  int caught = 0;
  for (uint64_t pos = fl; pos < o.size(); ++pos) {
    Bytes d = o;
    d[pos] ^= char(1u << (pos % 8));
    caught +=
        !check_damage(m, d, rows, address_byte[pos] ? Allowed::error_or_same : Allowed::error_only,
                      "free list byte " + std::to_string(pos));
  }
  EXPECT_GT(caught, 16);
}

// Several random bytes overwritten anywhere, or the file cut short: an
// error naming a position, or all rows with at most the damaged ones
// changed. Seeded (STRATA_TEST_SEED replays a failure).
TEST_F(DetsFileTest, RandomDamageNeverCrashesOrDropsRows) {
  const std::string f = sub("t.dets");
  make_small(f, 200);
  MemDets m(read_bytes(f));
  const auto rows = sorted_lines(f + ".expected");
  const uint64_t seed = strata::test::test_seed(20240601);
  Random rng(seed);
  const int n = strata::test::scaled(3000);
  int errors = 0;
  for (int i = 0; i < n; ++i) {
    Bytes d = m.original();
    const int k = 1 + int(rng.uniform(3));
    for (int j = 0; j < k; ++j) d[rng.uniform(d.size())] = char(rng.uniform(256));
    m.set(d);
    const auto o = m.read();
    if (!o.ok) {
      ++errors;
      EXPECT_EQ(o.error.message.rfind(std::string(MemDets::kPath) + ": byte ", 0), 0u)
          << "seed " << seed << " case " << i << ": " << o.error.message;
      continue;
    }
    EXPECT_EQ(o.rows.size(), rows.size()) << "seed " << seed << " case " << i;
    EXPECT_LE(rows_missing(rows, o.rows), size_t(k)) << "seed " << seed << " case " << i;
  }
  EXPECT_GT(errors, 0);
}

}  // namespace
}  // namespace strata::raftmeta::dets
