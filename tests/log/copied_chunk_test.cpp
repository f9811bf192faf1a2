// Copied chunks (StreamLog::append_copy): a replica's copy of its owner's
// log holds every chunk at the same offsets with the same epoch, time,
// entries, filter and publishers' sequences — across its own segment
// rolls, and after a reopen — and refuses what would make it diverge: a
// chunk not at its end, one from an older writer, damaged bytes. Chunks
// copied together (append_copies) are committed with one fsync.
#include <gtest/gtest.h>

#include "common/fault_fs.h"
#include "log/chunk_filter.h"
#include "log/log_entries_util.h"
#include "log/reader.h"
#include "log/stream_log.h"
#include "support/assertions.h"
#include "support/temp_dir.h"

namespace strata::log {
namespace {

LogOptions copy_opts(uint64_t max_segment_bytes, std::optional<uint64_t> epoch = std::nullopt) {
  LogOptions o;
  o.create_if_missing = true;
  o.fsync = FsyncPolicy::never;
  o.max_segment_bytes = max_segment_bytes;
  o.epoch = epoch;
  return o;
}

// Appends `n` batches of three simple entries; every other batch names a
// publisher and carries filter values.
void fill(StreamLog& log, int n) {
  for (int i = 0; i < n; ++i) {
    Bytes entries;
    for (int k = 0; k < 3; ++k) {
      entries += test::simple_entry("m" + std::to_string(i) + "-" + std::to_string(k) +
                                    std::string(100, char('a' + k)));
    }
    EntryBatch b;
    b.entries = entries;
    b.num_entries = 3;
    b.num_records = 3;
    FilterValues fv;
    if (i % 2 == 0) {
      b.writer_ref = i % 4 == 0 ? "pub-a" : "pub-b";
      b.writer_seq = uint64_t(100 + i);
      fv.add(i % 4 == 0 ? "red" : "blue");
      b.filter = &fv;
    }
    ASSERT_OK(log.append_entries(b));
  }
}

std::vector<Bytes> stored_chunks(StreamLog& log) {
  std::vector<Bytes> out;
  auto r = log.open_reader(OffsetSpec::first());
  EXPECT_OK(r);
  if (!r.ok()) return out;
  for (;;) {
    auto c = (*r)->next_chunk();
    EXPECT_OK(c);
    if (!c.ok() || !c->has_value()) return out;
    out.emplace_back((*c)->bytes);
  }
}

// The copy's chunks are the owner's (filled by fill()): same offsets,
// counts, time, type, data and wire CRC, the filter as stored, and `epoch`.
void expect_copied(const std::vector<Bytes>& chunks, const std::vector<Bytes>& copied,
                   uint64_t epoch) {
  ASSERT_EQ(copied.size(), chunks.size());
  for (size_t i = 0; i < chunks.size(); ++i) {
    auto a = decode_chunk_header(chunks[i], "owner");
    auto b = decode_chunk_header(copied[i], "copy");
    ASSERT_OK(a);
    ASSERT_OK(b);
    EXPECT_EQ(b->first_offset, a->first_offset) << i;
    EXPECT_EQ(b->num_records, a->num_records) << i;
    EXPECT_EQ(b->num_entries, a->num_entries) << i;
    EXPECT_EQ(b->timestamp_ms, a->timestamp_ms) << i;
    EXPECT_EQ(b->epoch, epoch) << i;
    EXPECT_EQ(b->type, a->type) << i;
    // What a consumer is sent is the owner's: the data and its wire CRC.
    EXPECT_EQ(b->wire_crc, a->wire_crc) << i;
    ASSERT_EQ(BytesView(copied[i]).substr(kChunkHeaderSize, b->data_len),
              BytesView(chunks[i]).substr(kChunkHeaderSize, a->data_len))
        << i;
    auto fa = chunk_filter_of(BytesView(chunks[i]).substr(kChunkHeaderSize + a->data_len), "a");
    auto fb = chunk_filter_of(BytesView(copied[i]).substr(kChunkHeaderSize + b->data_len), "b");
    ASSERT_OK(fa);
    ASSERT_OK(fb);
    EXPECT_EQ(*fb, *fa) << i;
    EXPECT_EQ(fa->empty(), i % 2 == 1) << i;
  }
}

TEST(CopiedChunk, ACopyHoldsEveryChunkAsTheOwnerWroteItAcrossItsOwnSegmentRolls) {
  strata::test::TempDir tmp;
  auto owner = StreamLog::open(tmp.sub("owner"), copy_opts(64 << 10, 7));
  ASSERT_OK(owner);
  fill(**owner, 60);
  const auto chunks = stored_chunks(**owner);
  ASSERT_EQ(chunks.size(), 60u);
  {
    // Much smaller segments than the owner's: the copy rolls where the
    // owner did not, so its segments' first chunks are not the owner's.
    auto copy = StreamLog::open(tmp.sub("copy"), copy_opts(2048));
    ASSERT_OK(copy);
    for (size_t i = 0; i < chunks.size(); ++i) {
      auto r = (*copy)->append_copy(chunks[i], "chunk " + std::to_string(i));
      ASSERT_OK(r);
    }
    EXPECT_GT((*copy)->segments().size(), 10u);
    EXPECT_EQ((*copy)->epoch(), 7u);
    ASSERT_OK((*copy)->close());
  }
  auto copy = StreamLog::open(tmp.sub("copy"), copy_opts(2048));
  ASSERT_OK(copy);
  EXPECT_EQ((*copy)->committed_next(), (*owner)->committed_next());
  EXPECT_EQ((*copy)->epoch(), 7u);
  // The newest segment alone rebuilt the publishers' sequences.
  EXPECT_EQ((*copy)->writer_sequence("pub-a"), (*owner)->writer_sequence("pub-a"));
  EXPECT_EQ((*copy)->writer_sequence("pub-b"), (*owner)->writer_sequence("pub-b"));
  EXPECT_EQ((*copy)->writer_sequence("pub-a"), std::optional<uint64_t>(156));
  const auto copied = stored_chunks(**copy);
  ASSERT_EQ(copied.size(), chunks.size());
  expect_copied(chunks, copied, 7);
}

TEST(CopiedChunk, AChunkNotAtTheEndFromAnOlderWriterOrDamagedIsRefusedAndNothingIsWritten) {
  strata::test::TempDir tmp;
  auto old_owner = StreamLog::open(tmp.sub("old"), copy_opts(64 << 10, 3));
  auto new_owner = StreamLog::open(tmp.sub("new"), copy_opts(64 << 10, 4));
  ASSERT_OK(old_owner);
  ASSERT_OK(new_owner);
  fill(**old_owner, 4);
  fill(**new_owner, 4);
  const auto olds = stored_chunks(**old_owner);
  const auto news = stored_chunks(**new_owner);
  auto copy = StreamLog::open(tmp.sub("copy"), copy_opts(64 << 10));
  ASSERT_OK(copy);
  ASSERT_OK((*copy)->append_copy(olds[0], "old 0"));
  ASSERT_OK((*copy)->append_copy(news[1], "new 1"));
  EXPECT_EQ((*copy)->epoch(), 4u);

  // Not at the end: a gap, and a repeat.
  EXPECT_EQ((*copy)->append_copy(news[3], "new 3").code(), Errc::invalid_argument);
  EXPECT_EQ((*copy)->append_copy(news[1], "new 1 again").code(), Errc::invalid_argument);
  // An older writer's chunk at the right offset.
  auto older = (*copy)->append_copy(olds[2], "old 2");
  EXPECT_EQ(older.code(), Errc::conflict);
  EXPECT_NE(older.error().message.find("old 2"), std::string::npos) << older.error().message;
  // A flipped data byte, a torn chunk.
  Bytes flipped = news[2];
  flipped[kChunkHeaderSize + 10] ^= 0x40;
  auto bad = (*copy)->append_copy(flipped, "flipped");
  EXPECT_EQ(bad.code(), Errc::corrupt);
  EXPECT_NE(bad.error().message.find("flipped"), std::string::npos) << bad.error().message;
  EXPECT_EQ((*copy)->append_copy(BytesView(news[2]).substr(0, news[2].size() - 1), "torn").code(),
            Errc::corrupt);
  EXPECT_EQ((*copy)->committed_next(), 6u);

  // The right chunk still goes in, and reads back as the owner's records.
  ASSERT_OK((*copy)->append_copy(news[2], "new 2"));
  auto back = test::read_all(**copy);
  ASSERT_OK(back.status);
  ASSERT_EQ(back.records.size(), 9u);
  EXPECT_EQ(back.records[8].second, "m2-2" + std::string(100, 'c'));
}

// What `fsync = always` costs a copier: every sync of a segment file.
struct SyncCount {
  FaultFileSystem fs;
  std::atomic<int> syncs{0};
  SyncCount() {
    fs.fail_when([this](const FaultOp& op) {
      if (op.kind == FaultOp::Kind::sync && op.path.ends_with(".segment")) syncs += 1;
      return false;
    });
  }
};

LogOptions synced_copy_opts(FileSystem* fs) {
  LogOptions o = copy_opts(1 << 20);
  o.fsync = FsyncPolicy::always;
  o.fs = fs;
  return o;
}

TEST(CopiedChunk, ChunksCopiedTogetherAreCommittedWithOneFsyncAndSurviveACrash) {
  strata::test::TempDir tmp;
  auto owner = StreamLog::open(tmp.sub("owner"), copy_opts(1 << 20, 5));
  ASSERT_OK(owner);
  fill(**owner, 20);
  const auto chunks = stored_chunks(**owner);
  ASSERT_EQ(chunks.size(), 20u);

  SyncCount one_by_one;
  {
    auto copy = StreamLog::open("/copy", synced_copy_opts(&one_by_one.fs));
    ASSERT_OK(copy);
    const int before = one_by_one.syncs;
    for (const Bytes& c : chunks) ASSERT_OK((*copy)->append_copy(c, "one by one"));
    EXPECT_GE(one_by_one.syncs - before, 20) << "one fsync per chunk";
  }

  SyncCount together;
  auto copy = StreamLog::open("/copy", synced_copy_opts(&together.fs));
  ASSERT_OK(copy);
  const int before = together.syncs;
  auto r = (*copy)->append_copies(chunks, "together");
  ASSERT_OK(r);
  EXPECT_EQ(r->first_offset, 0u);
  EXPECT_EQ(r->next_offset, (*owner)->committed_next());
  EXPECT_EQ(together.syncs - before, 1) << "one fsync for the batch";

  // Acknowledged means durable: a power loss right after keeps all of it.
  copy->reset();
  together.fs.crash();
  auto reopened = StreamLog::open("/copy", synced_copy_opts(&together.fs));
  ASSERT_OK(reopened);
  EXPECT_EQ((*reopened)->committed_next(), (*owner)->committed_next());
  expect_copied(chunks, stored_chunks(**reopened), 5);
}

TEST(CopiedChunk, ABatchStopsAtItsFirstBadChunkKeepingTheOnesBefore) {
  strata::test::TempDir tmp;
  auto owner = StreamLog::open(tmp.sub("owner"), copy_opts(1 << 20, 2));
  ASSERT_OK(owner);
  fill(**owner, 6);
  const auto chunks = stored_chunks(**owner);
  ASSERT_EQ(chunks.size(), 6u);
  auto copy = StreamLog::open(tmp.sub("copy"), copy_opts(1 << 20));
  ASSERT_OK(copy);
  // Chunk 3 is missing: 4 does not start at the copy's end.
  const std::vector<Bytes> gap{chunks[0], chunks[1], chunks[2], chunks[4], chunks[5]};
  auto r = (*copy)->append_copies(gap, "batch with a gap");
  EXPECT_EQ(r.code(), Errc::invalid_argument);
  EXPECT_NE(r.error().message.find("batch with a gap"), std::string::npos) << r.error().message;
  EXPECT_EQ((*copy)->committed_next(), 9u) << "chunks 0..2, three records each";
  // A damaged chunk is refused before anything of the batch is queued.
  Bytes flipped = chunks[4];
  flipped[kChunkHeaderSize + 3] ^= 0x01;
  const std::vector<Bytes> damaged{chunks[3], flipped};
  EXPECT_EQ((*copy)->append_copies(damaged, "damaged").code(), Errc::corrupt);
  EXPECT_EQ((*copy)->committed_next(), 9u);
  // The right ones still go in.
  const std::vector<Bytes> rest{chunks[3], chunks[4], chunks[5]};
  ASSERT_OK((*copy)->append_copies(rest, "rest"));
  EXPECT_EQ((*copy)->committed_next(), (*owner)->committed_next());
  // An empty batch is nothing to do.
  auto none = (*copy)->append_copies({}, "empty");
  ASSERT_OK(none);
  EXPECT_EQ(none->first_offset, none->next_offset);
}

}  // namespace
}  // namespace strata::log
