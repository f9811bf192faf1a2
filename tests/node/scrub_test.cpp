// `strata scrub` on a bucket written by a real node, with one damage class
// planted per stream: a deleted fragment, a flipped byte, a truncated
// object, a fragment holding another one's offsets, a lost root, an orphan,
// an unparsable key, and manifests crafted (through the manifest codec and
// the catalog) with a gap and with an overlap. Each report must name what
// was planted — through the library and through the CLI, JSON and exit
// codes included.
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "catalog/embedded_catalog.h"
#include "common/fs.h"
#include "node/node_s3_fixture.h"
#include "support/cli.h"
#include "tier/manifest_codec.h"
#include "tier/scrub_run.h"

namespace strata::node {
namespace {

using json = nlohmann::json;
using strata::test::strata_cli;
using strata::test::TempDir;
using namespace strata::node::test;
using tier::FindingKind;

// Streams, one per damage class; "clean" stays intact.
const std::vector<std::string> kStreams = {"clean", "missing",   "flipped", "truncated",
                                           "moved", "lost-root", "orphan",  "unparsable",
                                           "gap",   "overlap"};

class Scrub : public ::testing::Test {
 protected:
  void SetUp() override {
    doc_ = small_node_doc();
    doc_["data_dir"] = tmp_.sub("data");
    config_ = tmp_.sub("node.json");
    std::ofstream(config_) << doc_.dump();
    auto cfg = load_node_config(doc_, "", no_env());
    ASSERT_OK(cfg);
    cfg_ = *cfg;
    auto n = Node::open(cfg_);
    ASSERT_OK(n);
    for (const auto& s : kStreams) {
      auto log = (*n)->create_stream(s);
      ASSERT_OK(log);
      next_[s] = append_values(**log, 40);
      ASSERT_OK((*n)->flush(s, std::chrono::seconds(30)));
    }
    ASSERT_OK((*n)->close());
    auto store = objstore::open_object_store(cfg_.objstore);
    ASSERT_OK(store);
    store_ = std::move(store).value();
    auto cat = catalog::EmbeddedCatalog::open(posix_fs(), cfg_.data_dir + "/catalog");
    ASSERT_OK(cat);
    catalog_ = std::move(cat).value();
  }

  tier::ObjectKeys keys(const std::string& s) { return *tier::ObjectKeys::make("t", s); }

  tier::Manifest manifest(const std::string& s, catalog::StreamEntry* entry = nullptr) {
    auto e = catalog_->get(s);
    EXPECT_OK(e);
    if (entry) *entry = *e;
    auto body = store_->get(e->root_key);
    EXPECT_OK(body);
    auto root = tier::decode_root(*body, e->root_key);
    EXPECT_OK(root);
    return root->manifest;
  }

  // The i-th fragment of the stream's (flat) manifest: key and range.
  std::string fragment_key(const std::string& s, size_t i) {
    tier::Manifest m = manifest(s);
    EXPECT_GT(m.entries.size(), i + 1) << "the stream needs more fragments";
    return keys(s).for_entry(m.entries.at(i));
  }

  Bytes get(const std::string& key) {
    auto b = store_->get(key);
    EXPECT_OK(b);
    return b.ok() ? *b : Bytes();
  }
  void put(const std::string& key, BytesView body) { ASSERT_OK(store_->put(key, body)); }

  // Commits `m` as the stream's manifest: a new root object and the
  // catalog's compare-and-set, as a persist does.
  void commit(const std::string& s, const tier::Manifest& m, uint32_t uid) {
    catalog::StreamEntry e;
    (void)manifest(s, &e);
    std::string key = keys(s).root(e.epoch, uid);
    put(key, tier::encode_root(m, e.epoch));
    auto r = catalog_->put(s, key, e.epoch, e.revision);
    ASSERT_OK(r);
    ASSERT_EQ(r->outcome, catalog::PutOutcome::ok);
  }

  tier::ScrubReport scrub(const std::string& s, bool full) {
    tier::ScrubOptions o;
    o.full = full;
    o.sample = 0;
    auto r = tier::scrub_stream(*store_, tier::CatalogSource::live(*catalog_), keys(s), o);
    EXPECT_OK(r);
    return r.ok() ? *r : tier::ScrubReport{};
  }

  void plant_all();

  TempDir tmp_;
  json doc_;
  std::string config_;
  NodeConfig cfg_;
  std::map<std::string, uint64_t> next_;
  std::unique_ptr<objstore::ObjectStore> store_;
  std::unique_ptr<catalog::EmbeddedCatalog> catalog_;
  // What was planted where.
  std::string missing_key_, flipped_key_, truncated_key_, moved_key_, orphan_key_, bad_key_;
  uint64_t missing_first_ = 0, missing_next_ = 0;
  uint64_t gap_first_ = 0, gap_next_ = 0;
  tier::ManifestEntry dropped_;
  uint64_t overlap_first_ = 0, overlap_next_ = 0;
};

// The kinds found, orphans left out: a node closed right after a persist
// may leave its previous root behind (deleted after the delete grace).
std::multiset<FindingKind> kinds(const tier::ScrubReport& r) {
  std::multiset<FindingKind> out;
  for (const auto& f : r.findings) {
    if (f.kind != FindingKind::orphan) out.insert(f.kind);
  }
  return out;
}

bool has_orphan(const tier::ScrubReport& r, const std::string& key) {
  for (const auto& f : r.findings) {
    if (f.kind == FindingKind::orphan && f.key == key) return true;
  }
  return false;
}

const tier::ScrubFinding* find(const tier::ScrubReport& r, FindingKind k) {
  for (const auto& f : r.findings) {
    if (f.kind == k) return &f;
  }
  return nullptr;
}

std::string describe(const tier::ScrubReport& r) {
  std::string s;
  for (const auto& f : r.findings) {
    s += std::string(tier::finding_name(f.kind)) + " " + f.key + ": " + f.detail + "\n";
  }
  return s;
}

void Scrub::plant_all() {
  // A deleted fragment.
  {
    tier::Manifest m = manifest("missing");
    missing_key_ = keys("missing").for_entry(m.entries[1]);
    missing_first_ = m.entries[1].offset;
    missing_next_ = m.entries[2].offset;
    ASSERT_OK(store_->remove(missing_key_));
  }
  // One byte of chunk data flipped (the store's own CRC is rewritten: only
  // the fragment's CRCs can tell).
  {
    flipped_key_ = fragment_key("flipped", 1);
    Bytes b = get(flipped_key_);
    b[tier::kFragmentHeaderSize + 100] ^= 0x40;
    put(flipped_key_, b);
  }
  // A truncated object.
  {
    truncated_key_ = fragment_key("truncated", 2);
    Bytes b = get(truncated_key_);
    b.resize(b.size() - 10);
    put(truncated_key_, b);
  }
  // A valid fragment object under another fragment's key: its header names
  // offsets its manifest entry does not.
  {
    moved_key_ = fragment_key("moved", 1);
    put(moved_key_, get(fragment_key("moved", 2)));
  }
  // The catalog names a root that is gone.
  {
    catalog::StreamEntry e;
    (void)manifest("lost-root", &e);
    ASSERT_OK(store_->remove(e.root_key));
  }
  // An old object nothing references, and a key that is not a tier key.
  orphan_key_ = keys("orphan").fragment(1'000'000, 1, 0x0bad0bad);
  put(orphan_key_, "leftover of a crashed upload");
  bad_key_ = keys("unparsable").stream_prefix() + "data/notes.txt";
  put(bad_key_, "not a fragment");
  // A manifest without its second fragment: the first one's entry now
  // claims the missing fragment's offsets.
  {
    tier::Manifest m = manifest("gap");
    gap_first_ = m.entries[1].offset;
    gap_next_ = m.entries[2].offset;
    m.total_size -= m.entries[1].size;
    dropped_ = m.entries[1];
    m.entries.erase(m.entries.begin() + 1);
    ASSERT_OK(tier::validate_manifest(m, "crafted"));
    commit("gap", m, 0x0000aaaa);
  }
  // A fragment holding its own chunks and the next fragment's first chunk
  // replaces the second entry.
  {
    tier::Manifest m = manifest("overlap");
    auto a = get(keys("overlap").for_entry(m.entries[1]));
    auto b = get(keys("overlap").for_entry(m.entries[2]));
    auto fa = tier::decode_fragment(a, "a");
    auto fb = tier::decode_fragment(b, "b");
    ASSERT_OK(fa);
    ASSERT_OK(fb);
    ASSERT_GE(fb->index.size(), 2u);
    uint64_t extra = fb->index[1].position;  // the next fragment's first chunk
    Bytes body(fa->data);
    body += Bytes(fb->data.substr(0, extra));
    tier::FragmentMeta meta = fa->header.meta;
    meta.next_offset = fb->index[1].first_offset;
    meta.size += extra;
    meta.chunk_count += 1;
    meta.last_ts = std::max(meta.last_ts, fb->index[0].timestamp_ms);
    std::vector<tier::ChunkIndexRecord> index = fa->index;
    index.push_back({fb->index[0].first_offset, fb->index[0].timestamp_ms, fa->header.meta.size});
    auto object = tier::encode_fragment(meta, index, fa->header.epoch, body);
    ASSERT_OK(object);
    tier::ManifestEntry e = m.entries[1];
    e.uid = 0x0000bbbb;
    e.size = meta.size;
    e.last_ts = meta.last_ts;
    put(keys("overlap").for_entry(e), *object);
    m.total_size += extra;
    m.entries[1] = e;
    overlap_first_ = m.entries[2].offset;
    overlap_next_ = meta.next_offset;
    commit("overlap", m, 0x0000cccc);
  }
}

TEST_F(Scrub, EveryPlantedDamageIsNamedWithItsKeyAndOffsets) {
  ASSERT_NO_FATAL_FAILURE(plant_all());

  auto clean = scrub("clean", true);
  EXPECT_TRUE(kinds(clean).empty()) << describe(clean);
  EXPECT_EQ(clean.next_offset, next_["clean"]);
  EXPECT_EQ(clean.fragments_verified, clean.fragments);
  EXPECT_GE(clean.fragments, 3u);

  auto missing = scrub("missing", false);
  ASSERT_EQ(kinds(missing), std::multiset{FindingKind::missing_object}) << describe(missing);
  auto* m = find(missing, FindingKind::missing_object);
  EXPECT_EQ(m->key, missing_key_);
  EXPECT_EQ(m->first_offset, missing_first_);
  EXPECT_EQ(m->next_offset, missing_next_);

  // A flipped data byte: invisible to headers and indexes, found by --full.
  auto flipped_sampled = scrub("flipped", false);
  EXPECT_FALSE(flipped_sampled.damaged()) << describe(flipped_sampled);
  auto flipped = scrub("flipped", true);
  ASSERT_EQ(kinds(flipped), std::multiset{FindingKind::crc_mismatch}) << describe(flipped);
  EXPECT_EQ(find(flipped, FindingKind::crc_mismatch)->key, flipped_key_);

  auto truncated = scrub("truncated", false);
  auto* size = find(truncated, FindingKind::size_mismatch);
  ASSERT_TRUE(size) << describe(truncated);
  EXPECT_EQ(size->key, truncated_key_);
  auto* index = find(truncated, FindingKind::crc_mismatch);
  ASSERT_TRUE(index) << describe(truncated);
  EXPECT_EQ(index->key, truncated_key_);

  auto moved = scrub("moved", false);
  auto* header = find(moved, FindingKind::header_mismatch);
  ASSERT_TRUE(header) << describe(moved);
  EXPECT_EQ(header->key, moved_key_);
  EXPECT_TRUE(find(moved, FindingKind::gap)) << describe(moved);
  EXPECT_TRUE(find(moved, FindingKind::overlap)) << describe(moved);

  auto lost = scrub("lost-root", false);
  EXPECT_TRUE(find(lost, FindingKind::missing_root)) << describe(lost);
  EXPECT_TRUE(lost.damaged());

  auto orphan = scrub("orphan", false);
  EXPECT_TRUE(kinds(orphan).empty()) << describe(orphan);
  EXPECT_FALSE(orphan.damaged());
  ASSERT_TRUE(has_orphan(orphan, orphan_key_)) << describe(orphan);
  for (const auto& f : orphan.findings) {
    if (f.key != orphan_key_) continue;
    ASSERT_TRUE(f.age_ms.has_value());
    EXPECT_LT(*f.age_ms, 600'000);
    EXPECT_EQ(f.first_offset, 1'000'000u);
  }

  auto unparsable = scrub("unparsable", false);
  ASSERT_EQ(kinds(unparsable), std::multiset{FindingKind::unparsable_key}) << describe(unparsable);
  EXPECT_EQ(find(unparsable, FindingKind::unparsable_key)->key, bad_key_);

  auto gap = scrub("gap", false);
  auto* g = find(gap, FindingKind::gap);
  ASSERT_TRUE(g) << describe(gap);
  EXPECT_EQ(g->first_offset, gap_first_);
  EXPECT_EQ(g->next_offset, gap_next_);
  EXPECT_TRUE(find(gap, FindingKind::header_mismatch)) << describe(gap);
  EXPECT_TRUE(has_orphan(gap, keys("gap").for_entry(dropped_)))
      << "the dropped fragment is referenced by nothing";
  EXPECT_EQ(gap.count(FindingKind::overlap), 0u) << describe(gap);

  auto overlap = scrub("overlap", true);
  auto* o = find(overlap, FindingKind::overlap);
  ASSERT_TRUE(o) << describe(overlap);
  EXPECT_EQ(o->first_offset, overlap_first_);
  EXPECT_EQ(o->next_offset, overlap_next_);
  EXPECT_EQ(overlap.count(FindingKind::gap), 0u) << describe(overlap);
  EXPECT_EQ(overlap.count(FindingKind::crc_mismatch), 0u) << "a well-formed object";
}

TEST_F(Scrub, TheCliReportsInJsonAndExitsByWhatItFound) {
  ASSERT_NO_FATAL_FAILURE(plant_all());
  ASSERT_OK(catalog_->close());  // the CLI opens it read-only, as beside a running node

  auto clean = strata_cli({"--json", "scrub", "--config", config_, "--stream", "clean", "--full"});
  EXPECT_EQ(clean.status, 0) << clean.out << clean.err;
  json c = strata::test::last_json(clean.out);
  ASSERT_TRUE(c.is_object()) << clean.out;
  EXPECT_FALSE(c["damaged"].get<bool>());
  EXPECT_EQ(c["streams"][0]["next_offset"], next_["clean"]);
  for (const auto& f : c["streams"][0]["findings"]) EXPECT_EQ(f["kind"], "orphan") << f;

  // Orphans alone are not damage.
  auto orphan = strata_cli({"--json", "scrub", "--config", config_, "--stream", "orphan"});
  EXPECT_EQ(orphan.status, 0) << orphan.out << orphan.err;
  json oj = strata::test::last_json(orphan.out);
  bool named = false;
  for (const auto& f : oj["streams"][0]["findings"]) {
    EXPECT_EQ(f["kind"], "orphan") << f;
    EXPECT_FALSE(f["damage"].get<bool>());
    named = named || f["key"] == orphan_key_;
  }
  EXPECT_TRUE(named) << orphan.out;

  // Every stream at once: exit 1, each damaged stream naming its damage.
  auto all = strata_cli({"--json", "scrub", "--config", config_, "--full"});
  EXPECT_EQ(all.status, 1) << all.out << all.err;
  json doc = strata::test::last_json(all.out);
  ASSERT_TRUE(doc.is_object()) << all.out;
  EXPECT_TRUE(doc["damaged"].get<bool>());
  EXPECT_EQ(doc["exit"], 1);
  std::map<std::string, json> by_stream;
  for (const auto& s : doc["streams"]) by_stream[s["stream"].get<std::string>()] = s;
  ASSERT_EQ(by_stream.size(), kStreams.size());
  auto has = [&](const std::string& stream, const std::string& kind, const std::string& key) {
    for (const auto& f : by_stream[stream]["findings"]) {
      if (f["kind"] == kind && (key.empty() || f["key"] == key)) return true;
    }
    return false;
  };
  EXPECT_FALSE(by_stream["clean"]["damaged"].get<bool>());
  EXPECT_TRUE(has("missing", "missing_object", missing_key_)) << by_stream["missing"];
  EXPECT_TRUE(has("flipped", "crc_mismatch", flipped_key_)) << by_stream["flipped"];
  EXPECT_TRUE(has("truncated", "size_mismatch", truncated_key_)) << by_stream["truncated"];
  EXPECT_TRUE(has("moved", "header_mismatch", moved_key_)) << by_stream["moved"];
  EXPECT_TRUE(has("lost-root", "missing_root", "")) << by_stream["lost-root"];
  EXPECT_TRUE(has("unparsable", "unparsable_key", bad_key_)) << by_stream["unparsable"];
  EXPECT_TRUE(has("gap", "gap", "")) << by_stream["gap"];
  EXPECT_TRUE(has("overlap", "overlap", "")) << by_stream["overlap"];
  for (const auto& f : by_stream["missing"]["findings"]) {
    if (f["kind"] != "missing_object") continue;
    EXPECT_EQ(f["first_offset"], missing_first_);
    EXPECT_EQ(f["next_offset"], missing_next_);
  }

  // The text output names the key and the class; progress stays on stderr.
  auto text = strata_cli({"scrub", "--config", config_, "--stream", "missing"});
  EXPECT_EQ(text.status, 1) << text.out << text.err;
  EXPECT_TRUE(strata::test::contains(text.out, "missing_object")) << text.out;
  EXPECT_TRUE(strata::test::contains(text.out, missing_key_)) << text.out;
  EXPECT_TRUE(strata::test::contains(text.out, "DAMAGED")) << text.out;

  // Bad arguments are named.
  auto both = strata_cli({"scrub", "--config", config_, "--full", "--sample", "3"});
  EXPECT_NE(both.status, 0);
  EXPECT_TRUE(strata::test::contains(both.err, "excludes")) << both.err;
  auto no_config = strata_cli({"scrub", "--config", tmp_.sub("absent.json")});
  EXPECT_EQ(no_config.status, 1);
  EXPECT_TRUE(strata::test::contains(no_config.err, "absent.json")) << no_config.err;
}

TEST_F(Scrub, AStreamInTheCatalogWithNothingPersistedIsClean) {
  ASSERT_OK(catalog_->create("empty", 1));
  auto r = scrub("empty", true);
  EXPECT_TRUE(r.findings.empty()) << describe(r);
  EXPECT_FALSE(r.damaged());
  EXPECT_TRUE(r.in_catalog);
  EXPECT_TRUE(r.root_key.empty());
}

}  // namespace
}  // namespace strata::node
