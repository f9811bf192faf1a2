// The remote tier's formats pinned by bytes (docs/formats/fragment.md,
// docs/formats/manifest.md): fragment object, manifest root (also empty), group, entries and
// edit batch. Each vector under tests/tier/golden/ is what the encoder must
// produce for a known value and decodes back to it; fields are also read
// through the vectors' annotations, at the document's offsets.
#include <gtest/gtest.h>

#include "common/crc32c.h"
#include "log/chunk.h"
#include "support/golden.h"
#include "tier/fragment_object.h"
#include "tier/manifest_codec.h"

namespace strata::tier {
namespace {

namespace golden = ::strata::test::golden;

constexpr int64_t kT0 = 1'700'000'000'000;

// A fragment of two chunks: offsets 100-101 and 102, uploaded at epoch 9.
struct TwoChunks {
  Bytes a = log::build_chunk({"a", "bc"}, 100, 9, kT0);
  Bytes b = log::build_chunk({"def"}, 102, 9, kT0 + 10);
  FragmentMeta meta{100, 103, kT0, kT0 + 10, a.size() + b.size(), 2};
  std::vector<ChunkIndexRecord> index{{100, kT0, 0}, {102, kT0 + 10, a.size()}};
};

// Root, group and edit batch all end with a CRC32C of every byte before it.
void expect_trailing_crc(const golden::Vector& v) {
  EXPECT_EQ(golden::field(v, "crc", "crc"), crc32c::value(v.bytes.data(), v.bytes.size() - 4))
      << v.path;
}

TEST(TierFormatGolden, FragmentObjectBytesArePinned) {
  const TwoChunks f;
  auto object = encode_fragment(f.meta, f.index, 9, f.a + f.b);
  ASSERT_TRUE(object.ok()) << object.error().to_string();
  const golden::Vector v = golden::load("tier/golden/fragment.hex");
  ASSERT_TRUE(golden::matches(v, *object));

  // The streaming encoder, fed in uneven pieces, writes the same bytes.
  auto enc = FragmentEncoder::make(f.meta, f.index, 9);
  ASSERT_TRUE(enc.ok()) << enc.error().to_string();
  Bytes streamed = enc->header();
  const Bytes body = f.a + f.b;
  for (size_t at = 0; at < body.size(); at += 29) {
    ASSERT_TRUE(enc->add_body(BytesView(body).substr(at, 29)).ok());
    streamed += body.substr(at, 29);
  }
  auto tail = enc->finish();
  ASSERT_TRUE(tail.ok()) << tail.error().to_string();
  EXPECT_EQ(streamed + *tail, *object);

  golden::expect_fields(v, "header",
                        {{"magic", 0x53544647},
                         {"version", 1},
                         {"flags", 0},
                         {"first_offset", 100},
                         {"next_offset", 103},
                         {"first_ts", uint64_t(kT0)},
                         {"last_ts", uint64_t(kT0 + 10)},
                         {"epoch", 9},
                         {"size", f.meta.size},
                         {"chunk_count", 2}});
  golden::expect_fields(
      v, "index record 1",
      {{"first_offset", 102}, {"timestamp", uint64_t(kT0 + 10)}, {"position", f.a.size()}});
  golden::expect_fields(v, "trailer", {{"chunk_count", 2}, {"magic", 0x53544645}});
  // Object size = 64 + size + 24 x chunk_count + 16; the CRCs cover the
  // documented ranges.
  EXPECT_EQ(v.bytes.size(), 64 + f.meta.size + 24 * 2 + 16);
  EXPECT_EQ(golden::field(v, "header", "header_crc"), crc32c::value(v.bytes.data(), 60));
  EXPECT_EQ(golden::field(v, "trailer", "index_crc"),
            crc32c::value(v.bytes.data() + 64 + f.meta.size, 24 * 2));
  EXPECT_EQ(golden::field(v, "trailer", "object_crc"),
            crc32c::value(v.bytes.data(), v.bytes.size() - 4));

  const Bytes bytes = golden::pinned_bytes(v);
  auto d = decode_fragment(bytes, "fragment.hex");
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ(d->header, (FragmentHeader{f.meta, 9}));
  EXPECT_EQ(d->data, body);
  EXPECT_EQ(d->index, f.index);
  auto idx = decode_fragment_index(BytesView(bytes).substr(fragment_index_position(f.meta.size)),
                                   {100, 103, f.meta.size}, "fragment.hex");
  ASSERT_TRUE(idx.ok()) << idx.error().to_string();
  EXPECT_EQ(*idx, f.index);
}

// A fragment uploaded before chunk version 3 holds version 2 chunks (data
// CRC in CRC32C): it still decodes with every chunk CRC checked, the
// streaming encoder (re-uploads, compaction) verifies and re-encodes it
// byte for byte, and a rotten byte in one of its chunks is still caught.
TEST(TierFormatGolden, FragmentOfVersion2ChunksStillDecodesAndVerifies) {
  const TwoChunks f;
  const golden::Vector v = golden::load("tier/golden/fragment-v2.hex");
  ASSERT_TRUE(v.problems.empty());
  const Bytes bytes = golden::pinned_bytes(v);
  auto d = decode_fragment(bytes, "fragment-v2.hex");
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ(d->header, (FragmentHeader{f.meta, 9}));
  EXPECT_EQ(d->index, f.index);
  const Bytes body(d->data);
  for (const ChunkIndexRecord& rec : d->index) {
    auto h = log::decode_chunk_header(BytesView(body).substr(rec.position), "fragment-v2.hex");
    ASSERT_TRUE(h.ok()) << h.error().to_string();
    EXPECT_EQ(h->version, 2);
    EXPECT_EQ(h->data_crc,
              crc32c::value(BytesView(body).substr(rec.position + log::kChunkHeaderSize,
                                                   h->total_size() - log::kChunkHeaderSize)));
  }

  auto enc = FragmentEncoder::make(f.meta, f.index, 9);
  ASSERT_TRUE(enc.ok()) << enc.error().to_string();
  Bytes streamed = enc->header();
  for (size_t at = 0; at < body.size(); at += 29) {
    ASSERT_TRUE(enc->add_body(BytesView(body).substr(at, 29)).ok());
    streamed += body.substr(at, 29);
  }
  auto tail = enc->finish();
  ASSERT_TRUE(tail.ok()) << tail.error().to_string();
  EXPECT_EQ(streamed + *tail, bytes);

  Bytes rotten = body;
  rotten[rotten.size() - 2] ^= 0x20;  // in chunk 1's data ("def")
  auto enc2 = FragmentEncoder::make(f.meta, f.index, 9);
  ASSERT_TRUE(enc2.ok());
  Status s = enc2->add_body(rotten);
  EXPECT_EQ(s.code(), Errc::corrupt);
  EXPECT_NE(s.error().message.find("chunk data CRC mismatch"), std::string::npos) << s.to_string();

  // The same byte with chunk 1's CRC32C (and so its header CRC) rewritten to
  // match, as a writer bug would leave it: the stored wire CRC no longer
  // fits the data, and the streaming check says so whatever the pieces.
  const ChunkIndexRecord& rec1 = d->index[1];
  auto h1 = log::decode_chunk_header(BytesView(rotten).substr(rec1.position), "rotten");
  ASSERT_TRUE(h1.ok()) << h1.error().to_string();
  h1->data_crc = crc32c::value(BytesView(rotten).substr(rec1.position + log::kChunkHeaderSize,
                                                        h1->total_size() - log::kChunkHeaderSize));
  log::encode_chunk_header(*h1, u8(rotten.data() + rec1.position));
  for (size_t step : {size_t(29), rotten.size()}) {
    auto enc3 = FragmentEncoder::make(f.meta, f.index, 9);
    ASSERT_TRUE(enc3.ok());
    Status s3;
    for (size_t at = 0; at < rotten.size() && s3.ok(); at += step) {
      s3 = enc3->add_body(BytesView(rotten).substr(at, step));
    }
    EXPECT_EQ(s3.code(), Errc::corrupt) << step;
    EXPECT_NE(s3.error().message.find("chunk wire CRC32 mismatch"), std::string::npos)
        << s3.to_string();
  }
}

// A root whose first entry is a kind-1 group partly consumed by retention
// (it starts at 0, the remote range at 100), then a fragment.
const ManifestEntry kGroupEntry{0, kT0, kT0 + 900, 4000, 3, 0xa1b2c3d4, 1};
const ManifestEntry kFragmentEntry{4096, kT0 + 1000, kT0 + 1100, 700, 9, 0x0badf00d, 0};

Manifest root_value() {
  Manifest m;
  m.first_offset = 100;
  m.next_offset = 5000;
  m.first_ts = kT0 + 5;
  m.last_ts = kT0 + 1100;
  m.total_size = 4500;
  m.entries = {kGroupEntry, kFragmentEntry};
  return m;
}

TEST(TierFormatGolden, ManifestRootAndEntryBytesArePinned) {
  const golden::Vector v = golden::load("tier/golden/root.hex");
  ASSERT_TRUE(golden::matches(v, encode_root(root_value(), 11)));
  golden::expect_fields(v, "header",
                        {{"magic", 0x53544D52},
                         {"version", 1},
                         {"level", 0},
                         {"reserved@7", 0},
                         {"first_offset", 100},
                         {"next_offset", 5000},
                         {"first_ts", uint64_t(kT0 + 5)},
                         {"last_ts", uint64_t(kT0 + 1100)},
                         {"total_size", 4500},
                         {"epoch", 11},
                         {"count", 2},
                         {"reserved@60", 0}});
  golden::expect_fields(v, "entry 0",
                        {{"offset", 0},
                         {"first_ts", uint64_t(kT0)},
                         {"last_ts", uint64_t(kT0 + 900)},
                         {"size", 4000},
                         {"epoch", 3},
                         {"uid", 0xa1b2c3d4},
                         {"kind", 1}});
  golden::expect_fields(v, "entry 1", {{"offset", 4096}, {"uid", 0x0badf00d}, {"kind", 0}});
  expect_trailing_crc(v);

  auto d = decode_root(golden::pinned_bytes(v), "root.hex");
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ(d->manifest, root_value());
  EXPECT_EQ(d->writer_epoch, 11u);
  // One entry on its own, through the entry codec.
  ManifestEntry back = decode_entry(u8(v.bytes.data()) + kManifestHeaderSize);
  EXPECT_EQ(back, kGroupEntry);
}

TEST(TierFormatGolden, EmptyRootBytesArePinned) {
  const golden::Vector v = golden::load("tier/golden/root-empty.hex");
  ASSERT_TRUE(golden::matches(v, encode_root(Manifest::empty_at(4096), 2)));
  // No entries: first == next, timestamps -1, total 0.
  golden::expect_fields(v, "header",
                        {{"first_offset", 4096},
                         {"next_offset", 4096},
                         {"first_ts", uint64_t(-1)},
                         {"last_ts", uint64_t(-1)},
                         {"total_size", 0},
                         {"epoch", 2},
                         {"count", 0}});
  expect_trailing_crc(v);
  auto d = decode_root(golden::pinned_bytes(v), "root-empty.hex");
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ(d->manifest, Manifest::empty_at(4096));
}

ManifestGroup group_value() {
  ManifestGroup g;
  g.level = 1;
  g.first_offset = 0;
  g.next_offset = 4096;
  g.first_ts = kT0;
  g.last_ts = kT0 + 900;
  g.total_size = 4000;
  g.epoch = 3;
  g.entries = {{0, kT0, kT0 + 400, 1800, 3, 0x00000001, 0},
               {2048, kT0 + 500, kT0 + 900, 2200, 3, 0x00000002, 0}};
  return g;
}

TEST(TierFormatGolden, ManifestGroupBytesArePinned) {
  const golden::Vector v = golden::load("tier/golden/group.hex");
  ASSERT_TRUE(golden::matches(v, encode_group(group_value())));
  golden::expect_fields(v, "header",
                        {{"magic", 0x53544D47},
                         {"version", 1},
                         {"level", 1},
                         {"first_offset", 0},
                         {"next_offset", 4096},
                         {"total_size", 4000},
                         {"epoch", 3},
                         {"count", 2}});
  golden::expect_fields(v, "entry 1", {{"offset", 2048}, {"size", 2200}, {"kind", 0}});
  expect_trailing_crc(v);
  auto d = decode_group(golden::pinned_bytes(v), "group.hex");
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ(*d, group_value());
}

EditBatch edit_batch_value() {
  EditBatch b;
  b.epoch = 9;
  b.prev_revision = 41;
  b.revision = 42;
  b.edits = {AppendEdit{kFragmentEntry, 5000}, TruncateEdit{1, 4096, kT0 + 1000, 4000},
             ReplaceEdit{0, 2, kGroupEntry}};
  return b;
}

TEST(TierFormatGolden, EditBatchBytesArePinned) {
  const golden::Vector v = golden::load("tier/golden/edit-batch.hex");
  ASSERT_TRUE(golden::matches(v, encode_edit_batch(edit_batch_value())));
  golden::expect_fields(v, "header",
                        {{"magic", 0x53544D45},
                         {"version", 1},
                         {"reserved", 0},
                         {"epoch", 9},
                         {"prev_revision", 41},
                         {"revision", 42},
                         {"count", 3}});
  golden::expect_fields(v, "edit 0: append", {{"type", 1}, {"next_offset", 5000}});
  golden::expect_fields(v, "edit 1: truncate",
                        {{"type", 2},
                         {"remove_entries", 1},
                         {"first_offset", 4096},
                         {"first_ts", uint64_t(kT0 + 1000)},
                         {"removed_bytes", 4000}});
  golden::expect_fields(v, "edit 2: replace", {{"type", 3}, {"position", 0}, {"count", 2}});
  expect_trailing_crc(v);
  auto d = decode_edit_batch(golden::pinned_bytes(v), "edit-batch.hex");
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ(*d, edit_batch_value());
}

}  // namespace
}  // namespace strata::tier
