// Property tests: random inputs from a printed, replayable seed
// (STRATA_TEST_SEED), iteration counts scaled by STRATA_TEST_SCALE.
#include <gtest/gtest.h>

#include <iostream>

#include "support/temp_dir.h"
#include "tier/fragment_assembly.h"
#include "tier/fragment_iterator.h"
#include "tier/fragment_object.h"
#include "tier/manifest_codec.h"
#include "tier/manifest_lookup.h"
#include "tier/manifest_retention.h"
#include "tier_test_util.h"

namespace strata::tier {
namespace {

using test::TreeBuilder;

uint64_t seed_for(const char* name, uint64_t fallback) {
  uint64_t s = ::strata::test::test_seed(fallback);
  std::cout << name << ": seed " << s << " (replay with STRATA_TEST_SEED=" << s << ")\n";
  return s;
}

RebalancePolicy random_policy(Random& rng) {
  return RebalancePolicy{uint32_t(2 + rng.uniform(6)), uint32_t(2 + rng.uniform(3))};
}

// A manifest grown by random appends, rebalances and retention passes,
// recording every edit.
struct RandomHistory {
  TreeBuilder t;
  Manifest start;
  explicit RandomHistory(Random& rng, int steps) : t(random_policy(rng), rng.uniform(1000)) {
    start = t.root;
    int64_t ts = int64_t(rng.uniform(1'000'000));
    for (int i = 0; i < steps; ++i) {
      uint64_t r = rng.uniform(10);
      if (r < 7) {
        ts += int64_t(rng.uniform(100));
        t.append(1 + rng.uniform(5), 1 + rng.uniform(1000), ts);
        if (rng.chance(3, 4)) t.rebalance();
      } else {
        RetentionSpec spec;
        if (rng.chance(1, 2)) spec.max_bytes = rng.uniform(t.root.total_size + 1);
        if (rng.chance(1, 2)) spec.max_age_ms = int64_t(rng.uniform(500));
        spec.max_objects_per_plan = uint32_t(1 + rng.uniform(20));
        auto plan = plan_retention(t.root, spec, ts, t.fetch());
        if (!plan.ok()) throw std::runtime_error(plan.error().to_string());
        if (plan->removes_anything()) {
          Status s = apply_edit(t.root, plan->edit);
          if (!s.ok()) throw std::runtime_error(s.to_string());
          t.edits.push_back(plan->edit);
        }
      }
    }
  }
};

}  // namespace

TEST(TierProperties, AppendAdvancesNextGrowsTotalAndKeepsOrder) {
  Random rng(seed_for("append", 11));
  for (int round = 0; round < ::strata::test::scaled(4 * 200); ++round) {
    TreeBuilder t(random_policy(rng), rng.uniform(100));
    for (int i = 0; i < 30; ++i) {
      Manifest before = t.root;
      uint64_t records = 1 + rng.uniform(9), size = 1 + rng.uniform(500);
      t.append(records, size, int64_t(i));
      ASSERT_EQ(t.root.next_offset, before.next_offset + records);
      ASSERT_EQ(t.root.total_size, before.total_size + size);
      ASSERT_EQ(t.root.entries.size(), before.entries.size() + 1);
      ASSERT_TRUE(std::equal(before.entries.begin(), before.entries.end(), t.root.entries.begin()));
      t.rebalance();
    }
  }
}

TEST(TierProperties, TruncateAdvancesFirstOffsetAndShrinksTotal) {
  Random rng(seed_for("truncate", 12));
  for (int round = 0; round < ::strata::test::scaled(4 * 200); ++round) {
    TreeBuilder t(random_policy(rng));
    t.grow(5 + rng.uniform(60));
    RetentionSpec spec;
    spec.max_bytes = rng.uniform(t.root.total_size);
    auto plan = plan_retention(t.root, spec, 0, t.fetch());
    ASSERT_TRUE(plan.ok());
    if (!plan->removes_anything()) continue;
    Manifest before = t.root;
    ASSERT_TRUE(apply_edit(t.root, plan->edit).ok());
    EXPECT_GT(t.root.first_offset, before.first_offset);
    EXPECT_EQ(t.root.total_size, before.total_size - plan->edit.removed_bytes);
    EXPECT_EQ(t.root.next_offset, before.next_offset);
    EXPECT_LE(t.root.total_size, std::max(*spec.max_bytes, t.fragments.back().size));
  }
}

TEST(TierProperties, EverySequenceOfEditsKeepsTheManifestValidAndEncodable) {
  Random rng(seed_for("edit sequences", 13));
  for (int round = 0; round < ::strata::test::scaled(4 * 100); ++round) {
    RandomHistory h(rng, 120);
    ASSERT_TRUE(validate_manifest(h.t.root, "final").ok());
    auto d = decode_root(encode_root(h.t.root, 5), "r");
    ASSERT_TRUE(d.ok()) << d.error().to_string();
    EXPECT_EQ(d->manifest, h.t.root);
    // Every group the tree reaches decodes back to itself.
    auto refs = all_fragments(
        h.t.shared(), [&](const ManifestEntry& e) -> Result<std::shared_ptr<const ManifestGroup>> {
          auto g = h.t.fetch()(e);
          if (!g.ok()) return g;
          auto back = decode_group(encode_group(**g), "g");
          if (!back.ok()) return back.error();
          EXPECT_EQ(*back, **g);
          return g;
        });
    ASSERT_TRUE(refs.ok()) << refs.error().to_string();
  }
}

TEST(TierProperties, ReplayingTheEditLogRebuildsTheSameManifest) {
  Random rng(seed_for("replay", 14));
  for (int round = 0; round < ::strata::test::scaled(4 * 100); ++round) {
    RandomHistory h(rng, 150);
    Manifest replay = h.start;
    for (const ManifestEdit& e : h.t.edits) ASSERT_TRUE(apply_edit(replay, e).ok());
    EXPECT_EQ(replay, h.t.root);
  }
}

TEST(TierProperties, BroadcastBatchesAcrossPersistCyclesReproduceTheManifest) {
  // The edits cut into batches at random points (one batch per persist),
  // encoded, decoded and applied in sequence, like a manifest cache does,
  // including retention truncations and rebalances.
  Random rng(seed_for("broadcast", 15));
  for (int round = 0; round < ::strata::test::scaled(4 * 100); ++round) {
    RandomHistory h(rng, 150);
    Manifest cache = h.start;
    uint64_t revision = 0;
    size_t i = 0;
    while (i < h.t.edits.size()) {
      size_t n = std::min<size_t>(h.t.edits.size() - i, 1 + rng.uniform(12));
      EditBatch b{2,
                  revision,
                  revision + 1,
                  {h.t.edits.begin() + long(i), h.t.edits.begin() + long(i + n)}};
      auto d = decode_edit_batch(encode_edit_batch(b), "b");
      ASSERT_TRUE(d.ok()) << d.error().to_string();
      ASSERT_EQ(d->prev_revision, revision);
      for (const ManifestEdit& e : d->edits) ASSERT_TRUE(apply_edit(cache, e).ok());
      revision = d->revision;
      i += n;
    }
    EXPECT_EQ(cache, h.t.root);
  }
}

TEST(TierProperties, RebalancePreservesTheFragmentSequence) {
  Random rng(seed_for("rebalance", 16));
  for (int round = 0; round < ::strata::test::scaled(4 * 100); ++round) {
    TreeBuilder t(random_policy(rng));
    for (int i = 0; i < 100; ++i) {
      t.append(1 + rng.uniform(3), 1 + rng.uniform(100), i);
      if (!rng.chance(1, 3)) continue;
      auto before = all_fragments(t.shared(), t.fetch());
      t.rebalance();
      auto after = all_fragments(t.shared(), t.fetch());
      ASSERT_TRUE(before.ok() && after.ok());
      ASSERT_EQ(*before, *after);
    }
  }
}

TEST(TierProperties, IteratorVisitsEveryFragmentOnceInOrderFromAnyOffset) {
  Random rng(seed_for("iterator", 17));
  for (int round = 0; round < ::strata::test::scaled(4 * 60); ++round) {
    RandomHistory h(rng, 100);
    auto all = all_fragments(h.t.shared(), h.t.fetch());
    ASSERT_TRUE(all.ok());
    // Once each, in order, contiguous, sizes matching the entries.
    uint64_t expect = h.t.root.first_offset, bytes = 0;
    for (const FragmentRef& r : *all) {
      ASSERT_EQ(r.offset, expect);
      ASSERT_GT(r.next_offset, r.offset);
      expect = r.next_offset;
      bytes += r.size;
    }
    ASSERT_EQ(expect, h.t.root.next_offset);
    ASSERT_EQ(bytes, h.t.root.total_size);
    for (int k = 0; k < 10 && !all->empty(); ++k) {
      uint64_t from =
          h.t.root.first_offset + rng.uniform(h.t.root.next_offset - h.t.root.first_offset + 3);
      FragmentIterator it(h.t.shared(), from, h.t.fetch());
      size_t j = 0;
      while (j + 1 < all->size() && (*all)[j + 1].offset <= from) ++j;
      if (from >= h.t.root.next_offset) j = all->size();
      while (true) {
        auto r = it.next();
        ASSERT_TRUE(r.ok());
        if (!r->has_value()) break;
        ASSERT_LT(j, all->size());
        ASSERT_EQ(**r, (*all)[j]);
        ++j;
      }
      ASSERT_EQ(j, all->size());
    }
  }
}

TEST(TierProperties, LookupsAgreeWithALinearScan) {
  Random rng(seed_for("lookup", 18));
  for (int round = 0; round < ::strata::test::scaled(4 * 60); ++round) {
    RandomHistory h(rng, 100);
    auto all = all_fragments(h.t.shared(), h.t.fetch());
    ASSERT_TRUE(all.ok());
    for (int k = 0; k < 30; ++k) {
      uint64_t off = rng.uniform(h.t.root.next_offset + 5);
      auto got = find_fragment(h.t.root, off, h.t.fetch());
      ASSERT_TRUE(got.ok());
      std::optional<FragmentRef> want;
      for (auto& r : *all) {
        if (r.offset <= off && off < r.next_offset) want = r;
      }
      ASSERT_EQ(*got, want) << "offset " << off;
      int64_t ts = h.t.root.first_ts + int64_t(rng.uniform(1500)) - 100;
      auto by_ts = find_fragment_by_timestamp(h.t.root, ts, h.t.fetch());
      ASSERT_TRUE(by_ts.ok());
      std::optional<FragmentRef> first_at;
      for (auto& r : *all) {
        if (r.last_ts >= ts) {
          first_at = r;
          break;
        }
      }
      ASSERT_EQ(*by_ts, first_at) << "timestamp " << ts;
    }
  }
}

TEST(TierProperties, RetentionMatchesTheRuleAppliedFragmentByFragment) {
  Random rng(seed_for("retention", 19));
  for (int round = 0; round < ::strata::test::scaled(4 * 100); ++round) {
    RandomHistory h(rng, 80);
    auto all = all_fragments(h.t.shared(), h.t.fetch());
    ASSERT_TRUE(all.ok());
    RetentionSpec spec;
    spec.max_objects_per_plan = 1'000'000;
    if (rng.chance(1, 2)) spec.max_bytes = rng.uniform(h.t.root.total_size + 10);
    if (rng.chance(1, 2) || !spec.max_bytes) spec.max_age_ms = int64_t(rng.uniform(3000));
    int64_t now = h.t.root.last_ts + int64_t(rng.uniform(3000));
    // The naive rule over the flat list.
    uint64_t remaining = h.t.root.total_size;
    size_t drop = 0;
    while (drop + 1 < all->size()) {
      const FragmentRef& f = (*all)[drop];
      bool by_bytes = spec.max_bytes && remaining > *spec.max_bytes;
      bool by_age = spec.max_age_ms && f.last_ts < now - *spec.max_age_ms;
      if (!by_bytes && !by_age) break;
      remaining -= f.size;
      ++drop;
    }
    auto plan = plan_retention(h.t.root, spec, now, h.t.fetch());
    ASSERT_TRUE(plan.ok());
    ASSERT_EQ(plan->fragments_removed, drop);
    if (drop == 0) continue;
    EXPECT_EQ(plan->edit.first_offset, (*all)[drop].offset);
    EXPECT_EQ(plan->edit.removed_bytes, h.t.root.total_size - remaining);
  }
}

TEST(TierProperties, AssemblySizesOffsetsSpansAndIndexAreConsistent) {
  Random rng(seed_for("assembly", 20));
  for (int round = 0; round < ::strata::test::scaled(4 * 200); ++round) {
    AssemblyConfig cfg{200 + rng.uniform(3000), int64_t(rng.uniform(3)) * 1000};
    uint64_t first = rng.uniform(1000);
    FragmentAssembly a(cfg, first);
    struct Cut {
      FragmentPlan plan;
      int64_t opened_at, cut_at;
      uint64_t last_chunk;
      bool flush;
    };
    std::vector<Cut> cut;
    uint64_t off = first, pos = 8, seg = first, chunk_bytes = 0, last_chunk = 0;
    int64_t now = 0, opened_at = -1;
    for (int i = 0; i < 200; ++i) {
      log::ChunkHeader h;
      h.first_offset = off;
      h.num_records = uint32_t(1 + rng.uniform(5));
      h.timestamp_ms = now;
      h.data_len = uint32_t(rng.uniform(700));
      if (rng.chance(1, 10)) {
        seg = off;
        pos = 8;
      }
      now += int64_t(rng.uniform(300));
      if (a.empty()) opened_at = now;
      auto r = a.add(log::CommittedChunk{h, seg, pos, h.total_size()}, now);
      ASSERT_TRUE(r.ok());
      chunk_bytes += h.total_size();
      last_chunk = h.total_size();
      off = h.next_offset();
      pos += h.total_size();
      if (r->has_value()) cut.push_back(Cut{std::move(**r), opened_at, now, last_chunk, false});
      if (rng.chance(1, 20)) {
        if (auto t = a.tick(now)) cut.push_back(Cut{std::move(*t), opened_at, now, 0, false});
      }
    }
    if (auto rest = a.cut()) cut.push_back(Cut{std::move(*rest), opened_at, now, 0, true});
    uint64_t sum = 0, expect = first;
    for (const Cut& c : cut) {
      const FragmentPlan& p = c.plan;
      ASSERT_EQ(p.meta.first_offset, expect);  // offsets bounded and contiguous
      ASSERT_GT(p.meta.next_offset, p.meta.first_offset);
      expect = p.meta.next_offset;
      sum += p.meta.size;
      uint64_t span_sum = 0;
      for (size_t s = 0; s < p.spans.size(); ++s) {
        span_sum += p.spans[s].size();
        if (s > 0) {
          // Non-overlapping: a later span is in a later segment, or after.
          ASSERT_TRUE(p.spans[s].segment > p.spans[s - 1].segment ||
                      p.spans[s].start >= p.spans[s - 1].end);
        }
      }
      ASSERT_EQ(span_sum, p.meta.size);
      ASSERT_EQ(p.index.size(), p.meta.chunk_count);
      for (size_t k = 1; k < p.index.size(); ++k) {
        ASSERT_GT(p.index[k].position, p.index[k - 1].position);
        ASSERT_GT(p.index[k].first_offset, p.index[k - 1].first_offset);
      }
      if (c.flush) continue;
      // Cut at or above the target, or because it was old enough...
      bool aged = cfg.max_age_ms > 0 && c.cut_at - c.opened_at >= cfg.max_age_ms;
      ASSERT_TRUE(p.meta.size >= cfg.target_size || aged)
          << p.meta.size << " < " << cfg.target_size;
      // ...and at the first chunk that reached the target, not later.
      if (!aged) {
        ASSERT_LT(p.meta.size - c.last_chunk, cfg.target_size);
      }
    }
    ASSERT_EQ(sum, chunk_bytes);
    ASSERT_EQ(expect, off);
  }
}

TEST(TierProperties, FragmentObjectsRoundTripAndChunkLookupsAgreeWithAScan) {
  Random rng(seed_for("fragment object", 21));
  for (int round = 0; round < ::strata::test::scaled(4 * 100); ++round) {
    FragmentAssembly a({1ull << 40, 0}, 0);
    Bytes body;
    uint64_t off = 0;
    int n = int(1 + rng.uniform(12));
    for (int i = 0; i < n; ++i) {
      uint32_t recs = uint32_t(1 + rng.uniform(4));
      Bytes c = test::make_chunk(off, recs, size_t(rng.uniform(100)), int64_t(i * 10));
      ASSERT_TRUE(a.add(test::committed(c, 0, 8 + body.size()), 0).ok());
      body += c;
      off += recs;
    }
    FragmentPlan p = *a.cut();
    auto obj = encode_fragment(p.meta, p.index, 1, body);
    ASSERT_TRUE(obj.ok());
    auto d = decode_fragment(*obj, "o");
    ASSERT_TRUE(d.ok()) << d.error().to_string();
    ASSERT_EQ(d->index, p.index);
    for (uint64_t o = 0; o < off + 2; ++o) {
      std::optional<size_t> want;
      for (size_t k = 0; k < p.index.size(); ++k) {
        if (p.index[k].first_offset <= o) want = k;
      }
      ASSERT_EQ(find_chunk_by_offset(p.index, o), want);
    }
    for (int64_t ts = -5; ts < n * 10 + 5; ++ts) {
      std::optional<size_t> want;
      for (size_t k = 0; k < p.index.size() && !want; ++k) {
        if (p.index[k].timestamp_ms >= ts) want = k;
      }
      ASSERT_EQ(find_chunk_by_timestamp(p.index, ts), want);
    }
  }
}

}  // namespace strata::tier
