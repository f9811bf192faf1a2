// Manifest lookups and sizes at stream lengths that matter.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>

#include "bench_tree.h"
#include "common/random.h"
#include "tier/manifest_codec.h"
#include "tier/manifest_lookup.h"

namespace strata::tier::bench {
namespace {

const Tree& million() {
  // 2^20 fragments = 1024 per group x 32 x 32: one mega-group, three levels.
  static Tree t = [] {
    Tree x;
    x.grow(1 << 20, RebalancePolicy{});
    return x;
  }();
  return t;
}

void BM_LookupByOffset_1M_Fragments(benchmark::State& state) {
  const Tree& t = million();
  GroupFetch fetch = t.fetch();
  Random rng(1);
  std::vector<uint64_t> offsets(4096);
  for (auto& o : offsets) o = rng.uniform(t.root.next_offset);
  size_t i = 0;
  LookupStats stats;
  for (auto _ : state) {
    auto r = find_fragment(t.root, offsets[i++ & 4095], fetch, &stats);
    benchmark::DoNotOptimize(r);
  }
  state.counters["group_reads_per_lookup"] = double(stats.group_reads) / double(state.iterations());
  state.counters["root_entries"] = double(t.root.entries.size());
  state.counters["top_kind"] = double(t.root.entries[0].kind);
}
BENCHMARK(BM_LookupByOffset_1M_Fragments);

void BM_LookupByTimestamp_1M_Fragments(benchmark::State& state) {
  const Tree& t = million();
  GroupFetch fetch = t.fetch();
  Random rng(2);
  std::vector<int64_t> ts(4096);
  for (auto& x : ts) x = int64_t(rng.uniform(uint64_t(t.root.last_ts) + 1));
  size_t i = 0;
  LookupStats stats;
  for (auto _ : state) {
    auto r = find_fragment_by_timestamp(t.root, ts[i++ & 4095], fetch, &stats);
    benchmark::DoNotOptimize(r);
  }
  state.counters["group_reads_per_lookup"] = double(stats.group_reads) / double(state.iterations());
}
BENCHMARK(BM_LookupByTimestamp_1M_Fragments);

// Lookups confined to one leaf group (its 46 KB stay in cache): the
// compute cost of a lookup without the DRAM misses of a random one.
void BM_LookupByOffset_1M_Fragments_HotGroup(benchmark::State& state) {
  const Tree& t = million();
  GroupFetch fetch = t.fetch();
  Random rng(4);
  std::vector<uint64_t> offsets(4096);
  for (auto& o : offsets) o = 500'000 + rng.uniform(10'000);  // one group: 1024 x 10 offsets
  size_t i = 0;
  for (auto _ : state) {
    auto r = find_fragment(t.root, offsets[i++ & 4095], fetch);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_LookupByOffset_1M_Fragments_HotGroup);

// The peer: one binary search over a flat sorted array of the same 1 M
// fragment offsets (what a manifest without groups would do in memory).
void BM_Peer_FlatBinarySearch_1M(benchmark::State& state) {
  const Tree& t = million();
  std::vector<uint64_t> flat(t.fragments);
  for (uint64_t i = 0; i < flat.size(); ++i) flat[i] = i * 10;
  Random rng(1);
  std::vector<uint64_t> offsets(4096);
  for (auto& o : offsets) o = rng.uniform(t.root.next_offset);
  size_t i = 0;
  for (auto _ : state) {
    auto it = std::upper_bound(flat.begin(), flat.end(), offsets[i++ & 4095]);
    benchmark::DoNotOptimize(it);
  }
}
BENCHMARK(BM_Peer_FlatBinarySearch_1M);

// The same lookup when every group read must decode the object's bytes (a
// reader whose group cache missed but whose GET returned instantly): what
// the pure code costs per cold lookup, without the network.
void BM_LookupByOffset_1M_Fragments_DecodingGroups(benchmark::State& state) {
  const Tree& t = million();
  std::unordered_map<uint64_t, Bytes> encoded;
  for (auto& [k, g] : t.groups) encoded[k] = encode_group(*g);
  GroupFetch fetch = [&](const ManifestEntry& e) -> Result<std::shared_ptr<const ManifestGroup>> {
    auto g = decode_group(encoded.at(Tree::key(e.offset, e.kind)), "bench");
    if (!g.ok()) return g.error();
    return std::make_shared<const ManifestGroup>(std::move(*g));
  };
  Random rng(3);
  for (auto _ : state) {
    auto r = find_fragment(t.root, rng.uniform(t.root.next_offset), fetch);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_LookupByOffset_1M_Fragments_DecodingGroups);

// Root size at the worst stream length below 2^20 fragments (every kind's
// run one short of its threshold: 1023 fragments, 31 groups, 31
// kilo-groups), grown with real rebalances, and the analytic bound for any
// length below 2^64. Reported as counters; the timing is the encode.
void BM_RootSize_WorstCase(benchmark::State& state) {
  static Tree t = [] {
    Tree x;
    x.grow((1 << 20) - 1, RebalancePolicy{});
    return x;
  }();
  Bytes b;
  for (auto _ : state) {
    b = encode_root(t.root, 1);
    benchmark::DoNotOptimize(b);
  }
  state.counters["root_entries_at_2^20-1"] = double(t.root.entries.size());
  state.counters["root_bytes_at_2^20-1"] = double(b.size());
  // Any length: 1023 + 31 x 10 + 15 entries (kinds 0..10 full, kind 11 up
  // to 2^64 / 2^60), plus one append not yet rebalanced.
  size_t worst = 1023 + 31 * 10 + 15 + 1;
  state.counters["root_bytes_bound_any_length"] = double(encoded_root_size(worst));
  state.counters["root_bytes_limit"] = double(kRootSizeBound);
}
BENCHMARK(BM_RootSize_WorstCase);

}  // namespace
}  // namespace strata::tier::bench
