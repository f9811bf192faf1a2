// RemoteReader over a directory object store: fragments uploaded before
// chunk version 3 (their chunks carry a CRC32C data_crc) and after it read
// back chunk by chunk with every chunk CRC checked, and rot inside an old
// chunk is still caught. The reader across both tiers, through a node, is
// tested in tests/node/stream_reader_test.cpp.
#include "tier/remote_reader.h"

#include <gtest/gtest.h>

#include "objstore/fs_store.h"
#include "support/golden.h"
#include "support/temp_dir.h"
#include "tier/fragment_object.h"

namespace strata::tier {
namespace {

namespace golden = ::strata::test::golden;

constexpr int64_t kT0 = 1'700'000'000'000;
constexpr uint64_t kEpoch = 9;

struct Store {
  ::strata::test::TempDir dir;
  std::shared_ptr<objstore::ObjectStore> store;
  std::shared_ptr<BlockingPool> pool = std::make_shared<BlockingPool>(BlockingPoolOptions{2, 8});
  ObjectKeys keys = *ObjectKeys::make("p", "s1");

  Store() {
    auto s = objstore::FsObjectStore::open(posix_fs(), dir.sub("objects"), true);
    EXPECT_TRUE(s.ok()) << s.error().to_string();
    store = std::move(s).value();
  }
  ~Store() { pool->stop(); }
};

struct Read {
  std::vector<int> versions;
  std::vector<std::string> records;
  Status status;
};

// Every chunk of the manifest from offset 100.
Read read_all(Store& s, const Manifest& m) {
  Read out;
  RemoteReaderDeps deps;
  deps.store = s.store;
  deps.pool = s.pool;
  deps.range_bytes = 64;  // chunks straddle ranges
  auto r = RemoteReader::open(deps, s.keys, std::make_shared<const Manifest>(m),
                              RemoteStart{RemoteStart::Kind::offset, 100, 0});
  if (!r.ok()) {
    out.status = r.error();
    return out;
  }
  while (true) {
    auto c = (*r)->next(UINT64_MAX);
    if (!c.ok()) {
      out.status = c.error();
      return out;
    }
    if (!*c) return out;
    const log::ChunkHeader& h = (*c)->header;
    out.versions.push_back(h.version);
    auto recs = log::parse_records(h, (*c)->bytes.substr(log::kChunkHeaderSize, h.data_len),
                                   "remote chunk");
    if (!recs.ok()) {
      out.status = recs.error();
      return out;
    }
    for (BytesView v : *recs) out.records.emplace_back(v);
  }
}

TEST(RemoteReader, ReadsFragmentsOfVersion2AndVersion3Chunks) {
  Store s;
  // Offsets 100-102 in version 2 chunks ({a, bc}, {def}), as uploaded
  // before version 3, then 103-104 in a version 3 chunk.
  const Bytes old_frag = golden::pinned_bytes(golden::load("tier/golden/fragment-v2.hex"));
  auto old_header = decode_fragment_header(old_frag, "fragment-v2.hex");
  ASSERT_TRUE(old_header.ok()) << old_header.error().to_string();
  const FragmentMeta old_meta = old_header->meta;
  const Bytes c = log::build_chunk({"ghi", "jk"}, 103, kEpoch, kT0 + 20);
  const FragmentMeta new_meta{103, 105, kT0 + 20, kT0 + 20, c.size(), 1};
  auto new_frag = encode_fragment(new_meta, {{103, kT0 + 20, 0}}, kEpoch, c);
  ASSERT_TRUE(new_frag.ok()) << new_frag.error().to_string();
  ASSERT_TRUE(s.store->put(s.keys.fragment(100, kEpoch, 1), old_frag).ok());
  ASSERT_TRUE(s.store->put(s.keys.fragment(103, kEpoch, 2), *new_frag).ok());

  Manifest m;
  m.first_offset = 100;
  m.next_offset = 105;
  m.first_ts = kT0;
  m.last_ts = kT0 + 20;
  m.total_size = old_meta.size + new_meta.size;
  m.entries = {ManifestEntry{100, kT0, kT0 + 10, old_meta.size, kEpoch, 1, kKindFragment},
               ManifestEntry{103, kT0 + 20, kT0 + 20, new_meta.size, kEpoch, 2, kKindFragment}};
  Read got = read_all(s, m);
  ASSERT_TRUE(got.status.ok()) << got.status.to_string();
  EXPECT_EQ(got.versions, (std::vector<int>{2, 2, 3}));
  EXPECT_EQ(got.records, (std::vector<std::string>{"a", "bc", "def", "ghi", "jk"}));

  // A flipped bit in the old fragment's second chunk ("def"): the ranged
  // reads do not see the object CRC, the chunk's CRC32C catches it.
  Bytes rotten = old_frag;
  rotten[kFragmentHeaderSize + old_meta.size - 2] ^= 0x20;
  ASSERT_TRUE(s.store->put(s.keys.fragment(100, kEpoch, 3), rotten).ok());
  m.entries[0].uid = 3;
  got = read_all(s, m);
  EXPECT_EQ(got.status.code(), Errc::corrupt);
  EXPECT_NE(got.status.error().message.find("CRC mismatch"), std::string::npos)
      << got.status.to_string();
  EXPECT_NE(got.status.error().message.find(s.keys.fragment(100, kEpoch, 3)), std::string::npos)
      << got.status.to_string();
}

}  // namespace
}  // namespace strata::tier
