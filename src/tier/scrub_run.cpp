#include "tier/scrub_run.h"

#include <fmt/format.h>

#include <atomic>
#include <mutex>
#include <random>
#include <thread>

#include "common/random.h"
#include "tier/manifest_codec.h"
#include "tier/tier_limits.h"

namespace strata::tier {

namespace {

ReadState state_of(const objstore::ObjectError& e) {
  return e.retry == objstore::RetryClass::not_found ? ReadState::missing : ReadState::unreadable;
}

// Whether the catalog entry moved on from `seen` (so a vanished object may
// just have been replaced).
Result<bool> moved(const CatalogSource& catalog, const std::string& stream,
                   const catalog::StreamEntry& seen) {
  STRATA_ASSIGN_OR_RETURN(auto now, catalog.get(stream));
  return !now || now->revision != seen.revision;
}

// One pass of load_tree from `entry`. nullopt: the root moved mid-read,
// start again.
Result<std::optional<LoadedTree>> load_once(objstore::ObjectStore& store,
                                            const CatalogSource& catalog, const ObjectKeys& keys,
                                            std::optional<catalog::StreamEntry> entry) {
  LoadedTree t;
  t.entry = std::move(entry);
  if (!t.entry || t.entry->root_key.empty()) return std::optional<LoadedTree>(std::move(t));
  const std::string& root_key = t.entry->root_key;

  auto fail_root = [&](const objstore::ObjectError& e) -> Result<std::optional<LoadedTree>> {
    if (e.retry == objstore::RetryClass::not_found) {
      STRATA_ASSIGN_OR_RETURN(bool m, moved(catalog, keys.stream(), *t.entry));
      if (m) return std::optional<LoadedTree>();
    }
    t.root.state = state_of(e);
    t.root.error = e.to_string();
    return std::optional<LoadedTree>(std::move(t));
  };
  auto head = with_transient_retries([&] { return store.head(root_key); });
  if (!head.ok()) return fail_root(head.error());
  t.root_last_modified_ms = head->last_modified_ms;
  auto body = with_transient_retries([&] { return store.get(root_key); });
  if (!body.ok()) return fail_root(body.error());
  auto root = decode_root(*body, root_key);
  Status valid = root.ok() ? validate_manifest(root->manifest, root_key) : Status(root.error());
  if (!valid.ok()) {
    t.root.state = ReadState::corrupt;
    t.root.error = valid.error().message;
    return std::optional<LoadedTree>(std::move(t));
  }
  t.root.manifest = std::move(root->manifest);

  std::map<std::string, GroupRead> reads;
  for (;;) {
    t.walk = walk_tree(t.root.manifest, keys, reads);
    if (t.walk.complete()) return std::optional<LoadedTree>(std::move(t));
    for (const std::string& key : t.walk.unread) {
      GroupRead& r = reads[key];
      auto g = with_transient_retries([&] { return store.get(key); });
      if (!g.ok()) {
        if (g.retry() == objstore::RetryClass::not_found) {
          STRATA_ASSIGN_OR_RETURN(bool m, moved(catalog, keys.stream(), *t.entry));
          if (m) return std::optional<LoadedTree>();
        }
        r.state = state_of(g.error());
        r.error = g.error().to_string();
        continue;
      }
      auto decoded = decode_group(*g, key);
      if (!decoded.ok()) {
        r.state = ReadState::corrupt;
        r.error = decoded.error().message;
        continue;
      }
      r.group = std::move(decoded).value();
    }
  }
}

FragmentCheck check_fragment(objstore::ObjectStore& store, const TreeLeaf& leaf,
                             const objstore::ObjectInfo& listed, bool whole) {
  FragmentCheck c;
  c.read = true;
  const std::string& key = leaf.key;
  auto io_error = [&](const objstore::ObjectError& e) {
    if (e.retry == objstore::RetryClass::not_found) {
      c.vanished = true;
    } else {
      c.read_error = e.to_string();
    }
    return c;
  };
  auto take_header = [&](BytesView bytes) {
    auto h = decode_fragment_header(bytes, key);
    if (h.ok()) {
      c.header = *h;
    } else {
      c.header_error = h.error().message;
    }
  };
  if (whole) {
    auto body = with_transient_retries([&] { return store.get(key); });
    if (!body.ok()) return io_error(body.error());
    take_header(BytesView(*body).substr(0, kFragmentHeaderSize));
    c.whole_checked = true;
    auto f = decode_fragment(*body, key, /*verify_chunks=*/true);
    if (!f.ok()) c.whole_error = f.error().message;
    return c;
  }
  if (listed.size == 0) {
    c.header_error = "the object is empty";
    return c;
  }
  auto head = with_transient_retries([&] { return store.get_range(key, 0, kFragmentHeaderSize); });
  if (!head.ok()) return io_error(head.error());
  take_header(*head);
  // The index sits after the data: where depends on the data size, the
  // header's when it decoded (the header's own CRC vouches for it).
  FragmentExpectation expect{leaf.ref.offset, leaf.ref.next_offset, leaf.ref.size};
  if (c.header) {
    expect = {c.header->meta.first_offset, c.header->meta.next_offset, c.header->meta.size};
  }
  uint64_t position = fragment_index_position(expect.data_size);
  c.tail_checked = true;
  if (listed.size <= position) {
    c.tail_error = fmt::format("the object is {} bytes; its index would start at byte {}",
                               listed.size, position);
    return c;
  }
  auto tail = with_transient_retries(
      [&] { return store.get_range(key, position, listed.size - position); });
  if (!tail.ok()) return io_error(tail.error());
  auto index = decode_fragment_index(*tail, expect, key);
  if (!index.ok()) c.tail_error = index.error().message;
  return c;
}

// Which leaves to read whole: all, or `sample` of the listed ones at random.
std::vector<bool> pick_whole(const std::vector<TreeLeaf>& leaves,
                             const std::vector<const objstore::ObjectInfo*>& listed,
                             const ScrubOptions& opts) {
  std::vector<bool> whole(leaves.size(), opts.full);
  if (opts.full) return whole;
  std::vector<size_t> candidates;
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (listed[i]) candidates.push_back(i);
  }
  Random rng(opts.seed != 0 ? opts.seed : uint64_t(std::random_device{}()) | 1);
  for (uint64_t k = 0; k < opts.sample && !candidates.empty(); ++k) {
    size_t j = size_t(rng.uniform(candidates.size()));
    whole[candidates[j]] = true;
    candidates[j] = candidates.back();
    candidates.pop_back();
  }
  return whole;
}

}  // namespace

CatalogSource CatalogSource::live(catalog::Catalog& c) {
  CatalogSource s;
  s.list = [&c] { return c.list(); };
  s.get = [&c](const std::string& stream) -> Result<std::optional<catalog::StreamEntry>> {
    auto e = c.get(stream);
    if (e.ok()) return std::optional<catalog::StreamEntry>(std::move(e).value());
    if (e.error().code == Errc::not_found) return std::optional<catalog::StreamEntry>();
    return std::move(e).error();
  };
  return s;
}

Result<LoadedTree> load_tree(objstore::ObjectStore& store, const CatalogSource& catalog,
                             const ObjectKeys& keys) {
  STRATA_ASSIGN_OR_RETURN(auto entry, catalog.get(keys.stream()));
  return load_tree_from(store, catalog, keys, std::move(entry));
}

Result<LoadedTree> load_tree_from(objstore::ObjectStore& store, const CatalogSource& catalog,
                                  const ObjectKeys& keys,
                                  std::optional<catalog::StreamEntry> entry) {
  for (int attempt = 0; attempt < kScrubTreeAttempts; ++attempt) {
    if (attempt > 0) {
      STRATA_ASSIGN_OR_RETURN(entry, catalog.get(keys.stream()));
    }
    STRATA_ASSIGN_OR_RETURN(auto t, load_once(store, catalog, keys, entry));
    if (t) return std::move(*t);
  }
  LoadedTree t;
  t.entry = std::move(entry);
  t.root.state = ReadState::unreadable;
  t.root.error =
      fmt::format("its manifest root was replaced {} times while being read", kScrubTreeAttempts);
  return t;
}

void run_bounded(size_t n, size_t concurrency, const std::function<void(size_t)>& fn,
                 const std::function<void(size_t, const std::string&)>& threw) {
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      try {
        fn(i);
      } catch (const std::exception& e) {
        threw(i, e.what());
      } catch (...) {
        threw(i, "a non-standard exception");
      }
    }
  };
  size_t threads = std::min(std::max<size_t>(concurrency, 1), n);
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
}

Result<ScrubReport> scrub_stream(objstore::ObjectStore& store, const CatalogSource& catalog,
                                 const ObjectKeys& keys, const ScrubOptions& opts) {
  ScrubReport report;
  for (int attempt = 0; attempt < kScrubTreeAttempts; ++attempt) {
    ScrubInput in;
    in.stream = keys.stream();
    STRATA_ASSIGN_OR_RETURN(LoadedTree tree, load_tree(store, catalog, keys));
    auto listing =
        with_transient_retries([&] { return objstore::list_all(store, keys.stream_prefix()); });
    if (!listing.ok()) {
      return listing.error().to_error().with_context("listing " + keys.stream_prefix());
    }
    in.now_ms = opts.clock->now_ms();
    in.entry = tree.entry;
    in.root = std::move(tree.root);
    in.walk = std::move(tree.walk);
    in.listing = std::move(listing).value();

    std::map<std::string, const objstore::ObjectInfo*> by_key;
    for (const auto& o : in.listing) by_key.emplace(o.key, &o);
    const auto& leaves = in.walk.leaves;
    std::vector<const objstore::ObjectInfo*> listed(leaves.size(), nullptr);
    for (size_t i = 0; i < leaves.size(); ++i) {
      auto it = by_key.find(leaves[i].key);
      if (leaves[i].known && it != by_key.end()) listed[i] = it->second;
    }
    std::vector<bool> whole = pick_whole(leaves, listed, opts);
    in.checks.resize(leaves.size());
    std::mutex mu;
    uint64_t done = 0;
    const uint64_t total = uint64_t(
        std::count_if(listed.begin(), listed.end(), [](const auto* p) { return p != nullptr; }));
    run_bounded(
        leaves.size(), opts.concurrency,
        [&](size_t i) {
          if (!listed[i]) return;
          in.checks[i] = check_fragment(store, leaves[i], *listed[i], whole[i]);
          std::lock_guard l(mu);
          done += 1;
          if (opts.progress) opts.progress(done, total);
        },
        [&](size_t i, const std::string& what) {
          in.checks[i] = FragmentCheck{};
          in.checks[i].read = true;
          in.checks[i].read_error = "reading it threw: " + what;
        });
    report = scrub_report(in, keys);
    bool lost =
        report.count(FindingKind::missing_root) + report.count(FindingKind::missing_object) > 0;
    if (!lost || !in.entry) return report;
    // Missing objects while the catalog moved on: the scrub raced a persist
    // (and the deletes after it); look again at the newer root.
    STRATA_ASSIGN_OR_RETURN(bool m, moved(catalog, keys.stream(), *in.entry));
    if (!m) return report;
  }
  return report;
}

}  // namespace strata::tier
