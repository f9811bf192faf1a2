// Chunk filters (log/chunk_filter.h): the Bloom filter a chunk keeps of its
// messages' filter values, with osiris's semantics, and its place in the
// chunk's trailer ahead of the writer sequences.
#include "log/chunk_filter.h"

#include <gtest/gtest.h>

#include "common/fault_fs.h"
#include "common/random.h"
#include "log/log_entries_util.h"
#include "log/log_test_util.h"
#include "log/reader.h"
#include "log/stream_log.h"
#include "log/writer_sequences.h"

namespace strata::log {
namespace {

FilterValues values_of(std::initializer_list<std::string_view> vs, bool unfiltered = false) {
  FilterValues v;
  for (auto s : vs) v.add(s);
  v.unfiltered = v.unfiltered || unfiltered;
  return v;
}

TEST(ChunkFilter, AChunkWithoutValuesHasNoFilterAndMatchesOnlyUnfilteredConsumers) {
  EXPECT_TRUE(build_chunk_filter(FilterValues{}, 16).empty());
  // An empty value is no value.
  EXPECT_TRUE(build_chunk_filter(values_of({""}), 16).empty());
  EXPECT_FALSE(FilterMatcher({"a"}, false).may_match({}));
  EXPECT_TRUE(FilterMatcher({"a"}, true).may_match({}));
}

TEST(ChunkFilter, WantedValuesMatchAndBitZeroMarksUnfilteredMessages) {
  const Bytes only_ab = build_chunk_filter(values_of({"a", "b"}), 16);
  ASSERT_EQ(only_ab.size(), 16u);
  EXPECT_EQ(uint8_t(only_ab[0]) & 0x80, 0);
  EXPECT_TRUE(FilterMatcher({"a"}, false).may_match(only_ab));
  EXPECT_TRUE(FilterMatcher({"zzz", "b"}, false).may_match(only_ab));
  // Unfiltered messages wanted, none held: only a value can match.
  EXPECT_TRUE(FilterMatcher({"a"}, true).may_match(only_ab));

  const Bytes mixed = build_chunk_filter(values_of({"a"}, /*unfiltered=*/true), 32);
  ASSERT_EQ(mixed.size(), 32u);
  EXPECT_NE(uint8_t(mixed[0]) & 0x80, 0);
  EXPECT_TRUE(FilterMatcher({"not-there"}, true).may_match(mixed));
  // One matcher reads filters of any size (each chunk says its own).
  FilterMatcher m({"a"}, false);
  EXPECT_TRUE(m.may_match(mixed));
  EXPECT_TRUE(m.may_match(only_ab));
}

// A Bloom filter has no false negatives, and with one value per chunk in
// a 16-byte filter few false positives: a consumer of 1 value out of 100
// is sent few of the other 99 values' chunks.
TEST(ChunkFilter, NoFalseNegativesAndFewFalsePositives) {
  int false_positives = 0;
  for (int chunk = 0; chunk < 100; ++chunk) {
    const std::string value = "region-" + std::to_string(chunk);
    const Bytes f = build_chunk_filter(values_of({value}), 16);
    EXPECT_TRUE(FilterMatcher({value}, false).may_match(f)) << value;
    for (int other = 0; other < 100; ++other) {
      if (other == chunk) continue;
      if (FilterMatcher({"region-" + std::to_string(other)}, false).may_match(f)) {
        false_positives += 1;
      }
    }
  }
  // Two bits in 127: a random other value hits both with p ~ 1/127^2 when
  // the hashes are independent; 9900 pairs, so a handful at most.
  EXPECT_LT(false_positives, 30);
}

TEST(ChunkFilter, TrailerSectionComesFirstAndWriterSequencesStillDecode) {
  const Bytes f = build_chunk_filter(values_of({"x"}), 20);
  Bytes trailer;
  encode_filter_section(f, &trailer);
  ASSERT_EQ(trailer.size(), 22u);
  EXPECT_EQ(uint8_t(trailer[0]), kFilterTrailerSection);
  EXPECT_EQ(uint8_t(trailer[1]), 20);
  WriterTrailer w;
  w.writers = {{"app", 7}};
  encode_writer_trailer(w, &trailer);
  auto got = chunk_filter_of(trailer, "here");
  ASSERT_TRUE(got.ok()) << got.error().to_string();
  EXPECT_EQ(*got, BytesView(f));
  auto wt = decode_writer_trailer(trailer, "here");
  ASSERT_TRUE(wt.ok()) << wt.error().to_string();
  EXPECT_EQ(*wt, w);
  // A trailer of only a filter names no writer.
  Bytes only;
  encode_filter_section(f, &only);
  auto none = decode_writer_trailer(only, "here");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->writers.empty());
  // A section that runs past the trailer, or too small, is corrupt.
  Bytes cut(only.substr(0, 10));
  EXPECT_EQ(chunk_filter_of(cut, "chunk 9").code(), Errc::corrupt);
  Bytes small = only;
  small[1] = char(8);
  auto bad = chunk_filter_of(small, "chunk 9");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("chunk 9"), std::string::npos);
}

// The log keeps the filter of each chunk's batches: values merged, the
// stream's filter size, and bit 0 when a batch of the chunk had messages
// without a value; the filter survives a reopen (it is in the chunk's
// trailer, covered by the chunk's CRC) beside the writer sequences.
TEST(ChunkFilter, TheLogStoresEachChunksFilter) {
  FaultFileSystem fs;
  LogOptions o;
  o.fs = &fs;
  o.create_if_missing = true;
  o.fsync = FsyncPolicy::always;
  o.filter_size_bytes = 64;
  const Bytes e = test::simple_entry("m");
  FilterValues emea = values_of({"emea"});
  FilterValues mixed = values_of({"apac"}, true);
  {
    auto log = *StreamLog::open("/s", o);
    EntryBatch b;
    b.entries = e;
    b.num_entries = 1;
    b.num_records = 1;
    b.filter = &emea;
    b.writer_ref = "p";
    b.writer_seq = 3;
    ASSERT_TRUE(log->append_entries(b).ok());
    b.filter = &mixed;
    ASSERT_TRUE(log->append_entries(b).ok());
    b.filter = nullptr;
    ASSERT_TRUE(log->append_entries(b).ok());
    ASSERT_TRUE(log->close().ok());
  }
  auto log = *StreamLog::open("/s", o);
  EXPECT_EQ(log->writer_sequence("p"), 3u);
  auto r = *log->open_reader(OffsetSpec::first());
  std::vector<Bytes> filters;
  for (;;) {
    auto c = r->next_chunk();
    ASSERT_TRUE(c.ok()) << c.error().to_string();
    if (!*c) break;
    auto f = chunk_filter_of((*c)->trailer(), "chunk");
    ASSERT_TRUE(f.ok());
    filters.emplace_back(*f);
  }
  ASSERT_EQ(filters.size(), 3u);
  ASSERT_EQ(filters[0].size(), 64u);
  EXPECT_TRUE(FilterMatcher({"emea"}, false).may_match(filters[0]));
  // Every message of the first chunk had a value: bit 0 is clear.
  EXPECT_EQ(uint8_t(filters[0][0]) & 0x80, 0);
  EXPECT_TRUE(FilterMatcher({"apac"}, false).may_match(filters[1]));
  EXPECT_TRUE(FilterMatcher({"nothing"}, true).may_match(filters[1]));
  EXPECT_TRUE(filters[2].empty());
  EXPECT_FALSE(FilterMatcher({"emea"}, false).may_match(filters[2]));
}

// The trailer decoders on random and mutated bytes: an answer or a
// corrupt error, never a read outside the trailer (the sanitizer stage
// runs this too), and a filter returned is within the trailer and 16..255
// bytes.
TEST(ChunkFilter, TrailerDecodersOnRandomBytes) {
  Random rng(20261203);
  Bytes good;
  encode_filter_section(build_chunk_filter(values_of({"a", "b"}), 17), &good);
  WriterTrailer w;
  w.writers = {{"p", 1}, {"q", 2}};
  encode_writer_trailer(w, &good);
  for (int i = 0; i < 20000; ++i) {
    Bytes t;
    if (i % 2 == 0) {
      t = good.substr(0, rng.next() % (good.size() + 1));
      if (!t.empty()) t[rng.next() % t.size()] = char(rng.next());
    } else {
      t.resize(rng.next() % 40);
      for (char& c : t) c = char(rng.next());
      if (!t.empty() && rng.next() % 2) t[0] = char(kFilterTrailerSection);
    }
    auto f = chunk_filter_of(t, "fuzz");
    if (f.ok()) {
      EXPECT_TRUE(f->empty() || (f->size() >= kMinChunkFilterBytes && f->size() + 2 <= t.size()));
      FilterMatcher({"a"}, true).may_match(*f);
    } else {
      EXPECT_EQ(f.code(), Errc::corrupt);
    }
    auto wt = decode_writer_trailer(t, "fuzz");
    if (!wt.ok()) {
      EXPECT_EQ(wt.code(), Errc::corrupt);
    }
  }
}

}  // namespace
}  // namespace strata::log
