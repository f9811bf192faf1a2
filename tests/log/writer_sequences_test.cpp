// append_entries (osiris entries stored verbatim) and writer sequences
// stored with the data (log/writer_sequences.h): the trailer codec and its
// golden vector, the map across reopen, segment rolls and retention, and
// crashes on the fault-injecting file system.
#include "log/writer_sequences.h"

#include <gtest/gtest.h>

#include <map>

#include "common/fault_fs.h"
#include "common/random.h"
#include "log/entries.h"
#include "log/log_entries_util.h"
#include "log/log_test_util.h"
#include "log/reader.h"
#include "log/retention.h"
#include "support/assertions.h"
#include "support/golden.h"
#include "support/temp_dir.h"

namespace strata::log {
namespace {

using test::simple_entry;
using test::sub_batch;
namespace golden = ::strata::test::golden;

EntryBatch batch(const Bytes& entries, uint16_t n, uint32_t recs, std::string_view ref = {},
                 uint64_t seq = 0) {
  EntryBatch b;
  b.entries = entries;
  b.num_entries = n;
  b.num_records = recs;
  b.writer_ref = ref;
  b.writer_seq = seq;
  return b;
}

LogOptions mem_options(FaultFileSystem& fs) {
  LogOptions o;
  o.fs = &fs;
  o.create_if_missing = true;
  o.fsync = FsyncPolicy::always;
  return o;
}

TEST(WriterTrailer, RoundTripAndGoldenBytes) {
  WriterTrailer t;
  t.snapshot = true;
  t.writers = {{"app-1", 42}, {"b", 0x0102030405060708ull}};
  Bytes out;
  encode_writer_trailer(t, &out);
  const golden::Vector v = golden::load("log/golden/writer-trailer.hex");
  ASSERT_TRUE(golden::matches(v, out));
  golden::expect_fields(v, "writer trailer", {{"format", 1}, {"flags", 1}, {"count", 2}});
  golden::expect_fields(v, "writer 0", {{"ref_len", 5}, {"sequence", 42}});
  golden::expect_fields(v, "writer 1", {{"ref_len", 1}, {"sequence", 0x0102030405060708ull}});
  auto d = decode_writer_trailer(out, "t");
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ(*d, t);

  WriterSequences m{{"app-1", 50}, {"zz", 1}};
  apply_writer_trailer(t, &m);  // a snapshot replaces
  EXPECT_EQ(m, (WriterSequences{{"app-1", 42}, {"b", 0x0102030405060708ull}}));
  t.snapshot = false;
  t.writers = {{"app-1", 7}, {"c", 3}};
  apply_writer_trailer(t, &m);  // a delta only raises
  EXPECT_EQ(m["app-1"], 42u);
  EXPECT_EQ(m["c"], 3u);
}

TEST(WriterTrailer, MalformedIsCorruptNamingThePlace) {
  WriterTrailer t;
  t.writers = {{"a", 1}, {"b", 2}};
  Bytes good;
  encode_writer_trailer(t, &good);
  std::vector<std::pair<Bytes, const char*>> cases;
  cases.push_back({good.substr(0, 3), "truncated"});
  cases.push_back({good.substr(0, good.size() - 1), "runs past"});
  cases.push_back({good + "x", "after the last writer"});
  Bytes fmt2 = good;
  fmt2[0] = 2;
  cases.push_back({fmt2, "unknown format"});
  Bytes flags = good;
  flags[1] = 4;
  cases.push_back({flags, "unknown flags"});
  Bytes unsorted = good;
  unsorted[6 + 1] = 'c';  // "c" then "b"
  cases.push_back({unsorted, "not sorted"});
  Bytes empty_ref = good;
  empty_ref[6] = 0;
  cases.push_back({empty_ref, "empty writer reference"});
  for (const auto& [bytes, want] : cases) {
    auto d = decode_writer_trailer(bytes, "f.segment position 24");
    ASSERT_FALSE(d.ok()) << want;
    EXPECT_EQ(d.error().code, Errc::corrupt);
    EXPECT_NE(d.error().message.find("f.segment position 24"), std::string::npos);
    EXPECT_NE(d.error().message.find(want), std::string::npos) << d.error().message;
  }
}

// Entries go in verbatim; offsets count records; the reader expands
// uncompressed sub-batches and returns chunks (and entries) byte for byte.
TEST(AppendEntries, StoresEntriesVerbatimAndCountsOffsetsByRecords) {
  FaultFileSystem fs;
  auto log = *StreamLog::open("/s", mem_options(fs));
  ASSERT_OK(log->append({"r0"}));
  const Bytes e1 = simple_entry("a") + sub_batch(0, {"b", "c", "d"});
  auto r = log->append_entries(batch(e1, 2, 4));
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->first_offset, 1u);
  EXPECT_EQ(r->next_offset, 5u);
  const Bytes e2 = sub_batch(3, "lz4-bytes", 20, 300);
  r = log->append_entries(batch(e2, 1, 20));
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->first_offset, 5u);
  EXPECT_EQ(log->committed_next(), 25u);

  auto reader = *log->open_reader(OffsetSpec::first());
  std::vector<Record> recs;
  ASSERT_EQ(*reader->next_records(&recs), 1u);
  ASSERT_EQ(*reader->next_records(&recs), 4u);
  std::vector<std::pair<uint64_t, std::string>> got;
  for (auto& x : recs) got.emplace_back(x.offset, std::string(x.value));
  EXPECT_EQ(got, (std::vector<std::pair<uint64_t, std::string>>{
                     {0, "r0"}, {1, "a"}, {2, "b"}, {3, "c"}, {4, "d"}}));
  // The compressed sub-batch: records unsupported, naming lz4 and offset 5.
  auto bad = reader->next_records(&recs);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Errc::unsupported);
  EXPECT_NE(bad.error().message.find("lz4"), std::string::npos);
  EXPECT_NE(bad.error().message.find("offset 5"), std::string::npos) << bad.error().message;

  // As chunks and entries the same data reads back verbatim.
  auto cr = *log->open_reader(OffsetSpec::at_offset(1));
  auto c = *cr->next_chunk();
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->data(), e1);
  EXPECT_EQ(c->header.num_entries, 2);
  EXPECT_EQ(c->header.num_records, 4u);
  c = *cr->next_chunk();
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->data(), e2);
  EXPECT_OK(verify_wire_crc(c->header, c->bytes.substr(kChunkHeaderSize), "t"));
  auto entries = parse_entries(c->header, c->data(), "t");
  ASSERT_TRUE(entries.ok());
  EXPECT_EQ((*entries)[0].compression, 3);
  EXPECT_EQ((*entries)[0].num_records, 20);
  // Starting inside a sub-batch skips the records before the offset.
  auto mid = *log->open_reader(OffsetSpec::at_offset(3));
  recs.clear();
  ASSERT_EQ(*mid->next_records(&recs), 2u);
  EXPECT_EQ(recs[0].offset, 3u);
  EXPECT_EQ(recs[0].value, "c");
}

TEST(AppendEntries, InvalidBatchesAreRejectedNamingTheEntry) {
  FaultFileSystem fs;
  auto log = *StreamLog::open("/s", mem_options(fs));
  const Bytes good = simple_entry("a") + sub_batch(0, {"b", "c"});
  Bytes cut = good.substr(0, good.size() - 1);
  struct Case {
    EntryBatch b;
    const char* want;
  };
  const std::string long_ref(256, 'r');
  for (const Case& c : std::vector<Case>{
           {batch(good, 2, 2), "2 entries / 3 records, the batch says 2 entries / 2 records"},
           {batch(good, 1, 3), "the batch says 1 entries"},
           {batch(cut, 2, 3), "data byte 5"},
           {batch(Bytes(), 0, 0), "1..65535 entries"},
           {batch(good, 2, 3, long_ref, 1), "writer reference of 256 bytes"}}) {
    auto r = log->append_entries(c.b);
    ASSERT_FALSE(r.ok()) << c.want;
    EXPECT_EQ(r.error().code, Errc::invalid_argument);
    EXPECT_NE(r.error().message.find(c.want), std::string::npos) << r.error().message;
  }
  EXPECT_EQ(log->committed_next(), 0u);
  EXPECT_OK(log->append_entries(batch(good, 2, 3)));
}

TEST(WriterSequences, CommittedMaxPerWriterSurvivesReopen) {
  FaultFileSystem fs;
  const Bytes e = simple_entry("x");
  {
    auto log = *StreamLog::open("/s", mem_options(fs));
    EXPECT_FALSE(log->writer_sequence("p1").has_value());
    ASSERT_OK(log->append_entries(batch(e, 1, 1, "p1", 5)));
    ASSERT_OK(log->append_entries(batch(e, 1, 1, "p2", 9)));
    ASSERT_OK(log->append_entries(batch(e, 1, 1, "p1", 7)));
    ASSERT_OK(log->append_entries(batch(e, 1, 1, "p1", 6)));  // lower: the max stays
    ASSERT_OK(log->append({"plain"}));
    EXPECT_EQ(log->writer_sequence("p1"), 7u);
    EXPECT_EQ(log->writer_sequence("p2"), 9u);
    EXPECT_FALSE(log->writer_sequence("p3").has_value());
    ASSERT_OK(log->close());
  }
  auto log = *StreamLog::open("/s", mem_options(fs));
  EXPECT_EQ(log->writer_sequence("p1"), 7u);
  EXPECT_EQ(log->writer_sequence("p2"), 9u);
  EXPECT_FALSE(log->writer_sequence("p3").has_value());
  LogOptions ro = mem_options(fs);
  ro.read_only = true;
  ro.create_if_missing = false;
  auto rlog = *StreamLog::open("/s", ro);
  EXPECT_EQ(rlog->writer_sequence("p1"), 7u);
}

// Every segment's first chunk carries the snapshot; deleting old segments
// (retention) loses no writer, even one last seen in a deleted segment.
TEST(WriterSequences, SnapshotPerSegmentSurvivesRollAndRetention) {
  FaultFileSystem fs;
  LogOptions o = mem_options(fs);
  o.max_segment_chunks = 3;
  o.retention_on_roll = false;
  const Bytes e = simple_entry("payload");
  {
    auto log = *StreamLog::open("/s", o);
    ASSERT_OK(log->append_entries(batch(e, 1, 1, "early", 1)));
    for (uint64_t i = 0; i < 20; ++i) {
      ASSERT_OK(log->append_entries(batch(e, 1, 1, "steady", 100 + i)));
    }
    ASSERT_GE(log->segments().size(), 6u);
    // Each segment's first chunk: a snapshot holding both writers.
    for (const auto& s : log->segments()) {
      auto r = log->open_reader(OffsetSpec::at_offset(s.first_offset));
      ASSERT_OK(r);
      auto c = (*r)->next_chunk();
      ASSERT_OK(c);
      ASSERT_TRUE(c->has_value()) << "segment " << s.first_offset << " holds no chunk";
      ASSERT_EQ((*c)->segment_first_offset, s.first_offset);
      ASSERT_EQ((*c)->position, kFileHeaderSize);
      const ChunkHeader h = (*c)->header;
      ASSERT_GT(h.trailer_len, 0u);
      auto t = decode_writer_trailer((*c)->trailer(), "t");
      ASSERT_TRUE(t.ok()) << t.error().to_string();
      EXPECT_TRUE(t->snapshot);
      // As of the end of that chunk: offset 0 is "early"'s batch, offset k
      // > 0 is "steady"'s batch with sequence 100 + k - 1.
      ASSERT_EQ(t->writers.size(), h.first_offset == 0 ? 1u : 2u);
      EXPECT_EQ(t->writers[0], (std::pair<std::string, uint64_t>{"early", 1}));
      if (h.first_offset > 0) {
        EXPECT_EQ(t->writers[1].second, 100 + h.first_offset - 1);
      }
    }
    ASSERT_OK(log->close());
  }
  o.retention.max_bytes = 1;  // everything but the active segment
  {
    auto log = *StreamLog::open("/s", o);
    auto out = log->apply_retention();
    ASSERT_TRUE(out.ok()) << out.error().to_string();
    ASSERT_GE(out->deleted.size(), 5u);
    EXPECT_EQ(log->segments().size(), 1u);
    ASSERT_OK(log->close());
  }
  auto log = *StreamLog::open("/s", o);
  EXPECT_EQ(log->writer_sequence("early"), 1u);
  EXPECT_EQ(log->writer_sequence("steady"), 119u);
}

// While the active segment holds no chunk, the segment before it (whose
// chunks carry the writer sequences) is not deleted.
TEST(WriterSequences, RetentionKeepsTheSegmentBeforeAnEmptyActiveOne) {
  std::vector<SegmentInfo> segs(3);
  for (size_t i = 0; i < segs.size(); ++i) {
    segs[i].first_offset = i * 10;
    segs[i].next_offset = i * 10 + 10;
    segs[i].chunks = 2;
    segs[i].size_bytes = 1000;
  }
  RetentionOptions r;
  r.max_bytes = 1;
  EXPECT_EQ(plan_retention(segs, r, 0).count, 2u);
  segs.back().chunks = 0;
  segs.back().next_offset = segs.back().first_offset;
  EXPECT_EQ(plan_retention(segs, r, 0).count, 1u);
}

// Crashes at every point of a workload of writers on the fault-injecting
// file system: after reopen each writer's sequence is exactly the highest
// one among the batches the log holds, so every acknowledged append's
// sequence is seen (fsync always) and nothing unwritten is invented.
TEST(WriterSequences, CrashRestoresTheLastCommittedSequences) {
  strata::test::QuietLogs quiet;
  const uint64_t seed = strata::test::test_seed(4242);
  auto options = [](FaultFileSystem& fs) {
    LogOptions o = mem_options(fs);
    o.max_segment_bytes = 600;  // rolls every few batches
    return o;
  };
  struct Attempt {
    uint64_t first, next;
    std::string ref;
    uint64_t seq;
    bool acked;
  };
  auto run = [&](FaultFileSystem& fs, std::vector<Attempt>* out) {
    auto log = StreamLog::open("/s", options(fs));
    // Only the injected crash may stop the open (its budget can run out
    // inside it); anything else would leave the workload unrun and the test
    // passing on nothing.
    if (!log.ok()) {
      ASSERT_TRUE(fs.is_down()) << "opening the log for the workload failed with no crash "
                                   "injected: "
                                << log.error().to_string();
      return;
    }
    Random rng(seed);
    std::map<std::string, uint64_t> seq;
    for (int i = 0; i < 40; ++i) {
      const std::string ref = "w" + std::to_string(rng.uniform(3));
      const uint64_t s = (seq[ref] += 1 + rng.uniform(3));
      const int inner = int(rng.range(1, 3));
      Bytes e = simple_entry(test::payload_for(i, seed));
      std::vector<std::string> rs;
      for (int k = 0; k < inner; ++k) rs.push_back("s" + std::to_string(i * 10 + k));
      Bytes body;
      for (auto& x : rs) body += simple_entry(x);
      e += sub_batch(0, body, uint16_t(inner), uint32_t(body.size()));
      const uint64_t first = (*log)->committed_next();
      out->push_back({first, first + 1 + inner, ref, s, false});
      auto r = (*log)->append_entries(batch(e, 2, uint32_t(1 + inner), ref, s));
      if (!r.ok()) break;
      out->back().acked = true;
    }
    (void)(*log)->close();
  };
  // The empty log every run starts from (no crash injected yet).
  auto create = [&](FaultFileSystem& fs) {
    auto log = StreamLog::open("/s", options(fs));
    ASSERT_TRUE(log.ok()) << "creating the log: " << log.error().to_string();
    ASSERT_OK((*log)->close());
  };
  uint64_t setup, total;
  {
    FaultFileSystem fs;
    ASSERT_NO_FATAL_FAILURE(create(fs));
    setup = fs.mutation_count();
    std::vector<Attempt> a;
    ASSERT_NO_FATAL_FAILURE(run(fs, &a));
    total = fs.mutation_count() - setup;
    // Without a crash every batch of the workload is acknowledged.
    ASSERT_EQ(a.size(), 40u);
    ASSERT_TRUE(a.back().acked) << "an append failed with no crash injected";
  }
  const int max_points = strata::test::scaled(400);
  const uint64_t stride = std::max<uint64_t>(1, (total + 1) * 4 / uint64_t(max_points));
  int checked = 0;
  for (uint64_t n = 0; n <= total; n += stride) {
    for (int mode = 0; mode < 4; ++mode) {
      FaultFileSystem fs;
      ASSERT_NO_FATAL_FAILURE(create(fs));
      fs.crash_after(n);
      std::vector<Attempt> a;
      ASSERT_NO_FATAL_FAILURE(run(fs, &a));
      CrashOptions c;
      c.seed = seed * 31 + n * 7 + uint64_t(mode);
      c.keep_random_prefix = mode >= 1;
      c.tear = mode >= 2;
      c.random_dir_entries = mode >= 3;
      fs.crash(c);
      const std::string ctx =
          fmt::format("crash after {} of {} mutations, mode {}, seed {}", n, total, mode, seed);
      auto log = StreamLog::open("/s", options(fs));
      ASSERT_TRUE(log.ok()) << ctx << ": " << log.error().to_string();
      const uint64_t next = (*log)->committed_next();
      std::map<std::string, uint64_t> want;
      for (const auto& x : a) {
        if (x.acked) {
          ASSERT_GE(next, x.next) << ctx << ": lost an acknowledged batch";
        }
        if (x.next <= next) want[x.ref] = std::max(want[x.ref], x.seq);
      }
      for (const std::string ref : {"w0", "w1", "w2"}) {
        auto got = (*log)->writer_sequence(ref);
        if (want.count(ref)) {
          ASSERT_EQ(got, want[ref]) << ctx << " writer " << ref;
        } else {
          ASSERT_FALSE(got.has_value()) << ctx << " writer " << ref;
        }
      }
      // Records (sub-batches expanded) read back intact.
      auto rb = test::read_all(**log);
      ASSERT_TRUE(rb.status.ok()) << ctx << ": " << rb.status.to_string();
      ASSERT_EQ(rb.records.size(), next) << ctx;
      ++checked;
    }
  }
  EXPECT_GE(checked, max_points / 4);
  std::printf("[ writer sequences ] %d crash points checked\n", checked);
}

}  // namespace
}  // namespace strata::log
