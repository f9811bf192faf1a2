#include "tiered_stream.h"

#include <fmt/format.h>

#include <atomic>
#include <filesystem>
#include <iostream>
#include <latch>
#include <thread>

#include "log/chunk.h"
#include "tier/fragment_iterator.h"
#include "tier/fragment_object.h"

namespace strata::bench {

namespace {

json stream_doc(const StoreUnderTest::Place& place, const TieredStreamSpec& spec) {
  json doc = node_doc(place);
  doc["log"] = {{"fsync", "never"}, {"segment_bytes", spec.segment_bytes}};
  doc["tiering"]["fragment_target_bytes"] = spec.fragment_bytes;
  doc["tiering"]["persist_threshold"] = spec.persist_threshold;
  return doc;
}

}  // namespace

std::unique_ptr<TieredStream> make_tiered_stream(StoreUnderTest& store, const std::string& base,
                                                 const std::string& name,
                                                 const TieredStreamSpec& spec) {
  auto t = std::make_unique<TieredStream>();
  t->data_dir = base + "/" + name;
  fresh_dir(t->data_dir);
  t->place = store.place(name);
  json doc = stream_doc(t->place, spec);
  {
    auto n = open_node(doc, t->data_dir);
    auto log = must(n->create_stream(kReadStream), "creating the stream");
    const uint64_t batches =
        uint64_t(spec.mib * double(1 << 20)) / uint64_t(spec.batch * spec.record);
    // One producer: no group commit coalescing, so chunks are all alike.
    t->write_seconds = append_parallel(*log, 1, batches, spec.batch, spec.record);
    auto t0 = Clk::now();
    must(n->flush(kReadStream, std::chrono::minutes(10)), "uploading the stream");
    t->upload_seconds = secs(t0, Clk::now());
    must(n->close(), "closing the node");
  }
  const std::string stream_dir = t->data_dir + "/streams/" + kReadStream;
  if (!spec.local_copy_dir.empty()) {
    remove_dir(spec.local_copy_dir);
    std::filesystem::create_directories(std::filesystem::path(spec.local_copy_dir).parent_path());
    std::filesystem::copy(stream_dir, spec.local_copy_dir,
                          std::filesystem::copy_options::recursive |
                              std::filesystem::copy_options::create_hard_links);
  }
  // The same node with local retention on: what was uploaded leaves the disk.
  doc["log"]["retention"] = {{"max_bytes", 1}};
  t->node = open_node(doc, t->data_dir);
  // Returns once the uploader has loaded the persisted manifest (and so the
  // node's cache holds it): nothing new is committed.
  must(t->node->flush(kReadStream, std::chrono::minutes(2)), "waiting for the reopened uploader");
  t->log = must(t->node->stream(kReadStream), "the stream");
  must(t->log->apply_retention(), "local retention");
  t->local_first = t->log->first_offset();
  t->next = t->log->committed_next();
  t->manifest = must(t->node->cache().get(kReadStream), "the node's manifest").manifest;
  t->remote_first = t->manifest->first_offset;
  if (t->local_first <= t->remote_first || t->manifest->next_offset < t->local_first) {
    die(fmt::format("expected the remote tier [{}, {}) to reach below the local log from {}",
                    t->remote_first, t->manifest->next_offset, t->local_first));
  }
  return t;
}

TieredStream::~TieredStream() {
  if (node) (void)node->close();
}

tier::ObjectKeys TieredStream::keys() const {
  return must(tier::ObjectKeys::make(place.key_prefix, kReadStream), "object keys");
}

std::vector<tier::FragmentRef> TieredStream::remote_fragments() const {
  auto k = keys();
  auto all = must(tier::all_fragments(manifest, node->cache().groups().fetcher(node->store(), k)),
                  "walking the manifest");
  std::vector<tier::FragmentRef> out;
  for (const auto& f : all) {
    if (f.offset < local_first) out.push_back(f);
  }
  return out;
}

void TieredStream::finish(StoreUnderTest& store) {
  log.reset();
  if (node) must(node->close(), "closing the node");
  node.reset();
  store.clear(place);
  remove_dir(data_dir);
}

std::vector<tier::ObjectRange> reader_ranges(const tier::ObjectKeys& keys,
                                             const std::vector<tier::FragmentRef>& frags,
                                             uint64_t range_bytes) {
  std::vector<tier::ObjectRange> out;
  for (const auto& f : frags) {
    const std::string key = keys.for_entry(f.entry());
    for (uint64_t pos = 0; pos < f.size; pos += range_bytes) {
      out.push_back({key, tier::kFragmentHeaderSize + pos, std::min(range_bytes, f.size - pos)});
    }
  }
  return out;
}

double raw_ranged_gets(objstore::ObjectStore& store, const std::vector<tier::ObjectRange>& ranges,
                       int threads) {
  std::atomic<size_t> next{0};
  std::latch ready(threads + 1);
  std::latch go(1);
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&] {
      ready.count_down();
      go.wait();
      for (size_t i = next.fetch_add(1); i < ranges.size(); i = next.fetch_add(1)) {
        const auto& r = ranges[i];
        auto b = store.get_range(r.key, r.offset, r.length);
        if (!b.ok()) die("raw ranged GET: " + b.error().to_string());
        if (b->size() != r.length) {
          die(fmt::format("raw ranged GET of {}: {} bytes, asked for {}", r.key, b->size(),
                          r.length));
        }
      }
    });
  }
  ready.arrive_and_wait();
  auto t0 = Clk::now();
  go.count_down();
  for (auto& t : ts) t.join();
  return secs(t0, Clk::now());
}

void consume_records(const log::ChunkHeader& h, BytesView data) {
  static const std::string where = "benchmark consumer";
  auto recs = must(log::parse_records(h, data, where), "parsing a chunk's records");
  if (recs.size() != h.num_records) die("a chunk parsed into the wrong number of records");
}

}  // namespace strata::bench
