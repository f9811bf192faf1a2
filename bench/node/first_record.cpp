// node_bench first: time to the first record from a cold remote offset.
//
// A stream of --mib MiB (10 x 1 KiB records per chunk) is cut into small
// fragments (--fragment-kib, default 64) — more than 1024 of them, so the
// manifest has groups — uploaded, and dropped from local disk
// (tiered_stream.h). Each round starts cold: a new ManifestCache (so no
// root and no group is cached) and then, timed:
//   load   the catalog lookup and the root GET (what opening a node does
//          for each stream), decoded into the new cache;
//   open   StreamReader::open at offset N in the middle of the remote tier
//          (the group reads and the fragment's index GET);
//   first  the first next_records (the first data range, its CRC, the
//          records).
// Against it, the raw peer: the same requests (recorded from the reader:
// the root GET, each group GET, the index GET and the first data range
// GET) made back to back on the same client. Both use the node's object
// store client with its connections already open, and the node's pool.
// The order alternates each round, after one discarded warm-up. Two reader
// settings by default (--variants): the defaults (16 MiB read-ahead, 4
// ranges in flight) and none (one range at a time), to show what the
// read-ahead costs the first record.
#include <fmt/format.h>

#include <condition_variable>
#include <iostream>
#include <mutex>

#include "bench_env.h"
#include "tier/fragment_iterator.h"
#include "tier/manifest_cache.h"
#include "tier/upload_jobs.h"
#include "tiered_stream.h"

namespace strata::bench::first_record {

// An ObjectStore that remembers the GETs it forwards, and waits for those
// still running (a reader's abandoned prefetch) to end.
class RecordingStore final : public objstore::ObjectStore {
 public:
  struct Request {
    bool ranged = false;
    std::string key;
    uint64_t offset = 0, length = 0;
  };

  explicit RecordingStore(std::shared_ptr<objstore::ObjectStore> inner)
      : inner_(std::move(inner)) {}

  objstore::ObjectResult<objstore::PutResult> put(std::string_view key, objstore::BodyParts body,
                                                  const objstore::PutOptions& opts) override {
    return inner_->put(key, body, opts);
  }
  objstore::ObjectResult<uint64_t> get_to(std::string_view key, const objstore::GetSink& sink,
                                          const objstore::GetLimits& limits) override {
    begin({false, std::string(key), 0, 0});
    auto r = inner_->get_to(key, sink, limits);
    end();
    return r;
  }
  objstore::ObjectResult<uint64_t> read_range(std::string_view key, uint64_t offset,
                                              std::span<uint8_t> dst) override {
    begin({true, std::string(key), offset, dst.size()});
    auto r = inner_->read_range(key, offset, dst);
    end();
    return r;
  }
  uint64_t max_get_bytes() const override { return inner_->max_get_bytes(); }
  objstore::ObjectResult<objstore::ObjectInfo> head(std::string_view key) override {
    return inner_->head(key);
  }
  objstore::ObjectStatus remove(std::string_view key) override { return inner_->remove(key); }
  std::vector<objstore::RemoveOutcome> remove_many(std::span<const std::string> keys) override {
    return inner_->remove_many(keys);
  }
  objstore::ObjectResult<objstore::ListPage> list(const objstore::ListRequest& req) override {
    return inner_->list(req);
  }
  objstore::ObjectStatus check_access() override { return inner_->check_access(); }
  std::string describe() const override { return inner_->describe(); }

  size_t count() const {
    std::lock_guard l(mu_);
    return log_.size();
  }
  std::vector<Request> requests() const {
    std::lock_guard l(mu_);
    return log_;
  }
  void wait_idle() {
    std::unique_lock l(mu_);
    if (!cv_.wait_for(l, std::chrono::minutes(1), [&] { return running_ == 0; })) {
      die("a reader's GETs were still running a minute after it was closed");
    }
  }

 private:
  void begin(Request r) {
    std::lock_guard l(mu_);
    log_.push_back(std::move(r));
    running_ += 1;
  }
  void end() {
    std::lock_guard l(mu_);
    running_ -= 1;
    cv_.notify_all();
  }

  std::shared_ptr<objstore::ObjectStore> inner_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Request> log_;
  int running_ = 0;
};

struct ReaderRun {
  double load_ms = 0, open_ms = 0, first_ms = 0;
  uint64_t group_reads = 0, range_gets = 0;
  // The requests the first record needed: every one made before the
  // reader opened, and the first data range (of the fragment holding the
  // offset: the prefetch's threads may start later ranges before it).
  std::vector<RecordingStore::Request> needed;
};

ReaderRun run_reader(TieredStream& t, const std::shared_ptr<objstore::ObjectStore>& client,
                     uint64_t offset, const std::string& first_key,
                     const tier::StreamReaderOptions& o) {
  auto rec = std::make_shared<RecordingStore>(client);
  tier::TierContext ctx = t.node->tier_context(kReadStream);
  ctx.store = rec;
  ctx.cache = std::make_shared<tier::ManifestCache>();
  ReaderRun r;
  auto t0 = Clk::now();
  auto cm = must(tier::load_persisted_manifest(t.node->catalog(), *rec, kReadStream),
                 "loading the persisted manifest");
  must(ctx.cache->sync(kReadStream, cm), "filling the cache");
  auto t1 = Clk::now();
  auto reader = must(tier::StreamReader::open(t.log, ctx, log::OffsetSpec::at_offset(offset), o),
                     "opening the reader");
  auto t2 = Clk::now();
  const size_t at_open = rec->count();
  std::vector<log::Record> recs;
  size_t n = must(reader->next_records(&recs), "reading the first records");
  auto t3 = Clk::now();
  if (n == 0 || recs.front().offset != offset) die("the first record is not the one asked for");
  r.load_ms = 1e3 * secs(t0, t1);
  r.open_ms = 1e3 * secs(t1, t2);
  r.first_ms = 1e3 * secs(t2, t3);
  r.group_reads = reader->stats().group_reads;
  r.range_gets = reader->stats().range_gets;
  if (reader->stats().remote_chunks == 0) die("the first record did not come from the remote tier");
  reader.reset();
  // The prefetch the reader started goes on after it closes; the next
  // measurement must not share the store with it.
  rec->wait_idle();
  auto all = rec->requests();
  r.needed.assign(all.begin(), all.begin() + long(at_open));
  const RecordingStore::Request* data = nullptr;
  for (size_t i = at_open; i < all.size(); ++i) {
    if (all[i].ranged && all[i].key == first_key && (!data || all[i].offset < data->offset)) {
      data = &all[i];
    }
  }
  if (!data) die("no range of " + first_key + " was fetched after the reader opened");
  r.needed.push_back(*data);
  return r;
}

double run_raw(objstore::ObjectStore& client, const std::vector<RecordingStore::Request>& reqs) {
  auto t0 = Clk::now();
  for (const auto& q : reqs) {
    auto b = q.ranged ? client.get_range(q.key, q.offset, q.length) : client.get(q.key);
    if (!b.ok()) die("raw GET: " + b.error().to_string());
  }
  return 1e3 * secs(t0, Clk::now());
}

// One reader setting: rounds alternating the cold reader and the raw GETs.
struct Series {
  std::vector<double> load, open, first, total, raw, ratio;
  std::vector<RecordingStore::Request> needed;
  uint64_t group_reads = 0, range_gets = 0;
};

Series measure(TieredStream& t, const std::shared_ptr<objstore::ObjectStore>& client,
               uint64_t offset, const std::string& first_key, const tier::StreamReaderOptions& o,
               int rounds) {
  Series s;
  ReaderRun warm = run_reader(t, client, offset, first_key, o);
  if (warm.group_reads == 0) die("the reader read no group: the manifest has no groups");
  s.needed = warm.needed;
  (void)run_raw(*client, s.needed);
  for (int r = 0; r < rounds; ++r) {
    ReaderRun rr;
    double raw_ms = 0;
    auto do_reader = [&] { rr = run_reader(t, client, offset, first_key, o); };
    auto do_raw = [&] { raw_ms = run_raw(*client, s.needed); };
    if (r % 2 == 0) {
      do_reader();
      do_raw();
    } else {
      do_raw();
      do_reader();
    }
    if (rr.needed.size() != s.needed.size()) {
      die(fmt::format("the reader needed {} requests in one round and {} in another",
                      s.needed.size(), rr.needed.size()));
    }
    s.load.push_back(rr.load_ms);
    s.open.push_back(rr.open_ms);
    s.first.push_back(rr.first_ms);
    s.total.push_back(rr.load_ms + rr.open_ms + rr.first_ms);
    s.raw.push_back(raw_ms);
    s.ratio.push_back(s.total.back() / raw_ms);
    s.group_reads = rr.group_reads;
    s.range_gets = rr.range_gets;
  }
  return s;
}

// "root + groups + index + data" counts of the raw GETs.
std::string describe_requests(const std::vector<RecordingStore::Request>& needed) {
  size_t n_group = 0, n_index = 0;
  for (size_t i = 1; i + 1 < needed.size(); ++i) {
    if (needed[i].ranged) {
      n_index += 1;
    } else {
      n_group += 1;
    }
  }
  return fmt::format("{} = 1 + {} + {} + 1", needed.size(), n_group, n_index);
}

}  // namespace strata::bench::first_record

namespace strata::bench {

json run_first_record(const Args& args, const std::string& base) {
  using namespace first_record;
  TieredStreamSpec spec;
  spec.mib = args.num("mib", 160);
  spec.batch = 10;
  spec.record = 1024;
  spec.segment_bytes = 1 << 20;
  spec.fragment_bytes = uint64_t(args.num("fragment-kib", 64) * 1024);
  // Fewer roots for thousands of small fragments.
  spec.persist_threshold = uint32_t(args.integer("persist-threshold", 64));
  const int rounds = int(args.integer("rounds", 21));
  // Reader settings, "prefetch MiB:ranges in flight": the defaults, and no
  // read-ahead (a budget of 0 still fetches the one range the consumer
  // needs), which shows what read-ahead costs the first record.
  std::vector<tier::StreamReaderOptions> variants;
  for (const auto& v : args.list("variants", "16:4,0:1")) {
    auto colon = v.find(':');
    if (colon == std::string::npos) die("--variants takes prefetch-MiB:in-flight pairs");
    tier::StreamReaderOptions o;
    o.prefetch_bytes = uint64_t(std::stod(v.substr(0, colon)) * double(1 << 20));
    o.max_ranges_in_flight = uint32_t(std::stoul(v.substr(colon + 1)));
    variants.push_back(o);
  }
  const auto stores = args.list("stores", args.str("store", "fs"));

  print_machine();
  std::cout << fmt::format(
      "first: {:.0f} MiB (10 x 1 KiB records per chunk) in {} KiB fragments, dropped from local "
      "disk; per reader setting {} rounds alternating a cold reader at offset N (middle of the "
      "remote tier) and the same GETs back to back (after one discarded warm-up)\n\n",
      spec.mib, spec.fragment_bytes >> 10, rounds);
  print_row({"store", "fragments", "root entries", "N", "reader prefetch KiB / in flight",
             "load (catalog + root GET) ms", "open ms", "first next_records ms",
             "**reader ms** (load + open + first)", "raw GETs ms", "**reader / raw** (median)",
             "range", "raw GETs (root + groups + index + data)",
             "reader group reads / range GETs started"});
  print_row({"---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:",
             "---", "---", "---"});
  json out = {{"subcommand", "first"},
              {"machine", machine_json()},
              {"settings",
               {{"mib", spec.mib}, {"fragment_bytes", spec.fragment_bytes}, {"rounds", rounds}}},
              {"results", json::array()}};
  for (const auto& kind : stores) {
    auto store = StoreUnderTest::make(kind, args, base);
    auto t = make_tiered_stream(*store, base, "first-" + kind, spec);
    const size_t frags = t->remote_fragments().size();
    const uint64_t offset = t->remote_first + (t->local_first - t->remote_first) / 2 + 3;
    std::cerr << fmt::format(
        "{}: wrote {:.0f} MiB in {:.1f} s, uploaded in {:.1f} s more; {} remote fragments, {} "
        "root entries; reading from {}\n",
        kind, spec.mib, t->write_seconds, t->upload_seconds, frags, t->manifest->entries.size(),
        offset);
    std::shared_ptr<objstore::ObjectStore> client = store->open_raw(t->place);
    const auto keys = t->keys();
    auto holding = must(tier::FragmentIterator(t->manifest, offset,
                                               t->node->cache().groups().fetcher(*client, keys))
                            .next(),
                        "finding the fragment holding N");
    if (!holding) die("no fragment holds N");
    const std::string first_key = keys.for_entry(holding->entry());
    for (const auto& o : variants) {
      Series s = measure(*t, client, offset, first_key, o, rounds);
      print_row({kind, std::to_string(frags), std::to_string(t->manifest->entries.size()),
                 std::to_string(offset),
                 fmt::format("{} / {}", o.prefetch_bytes >> 10, o.max_ranges_in_flight),
                 fmt_num(median(s.load), 3), fmt_num(median(s.open), 3),
                 fmt_num(median(s.first), 3), "**" + fmt_num(median(s.total), 3) + "**",
                 fmt_num(median(s.raw), 3), "**" + fmt_num(median(s.ratio), 2) + "**",
                 fmt_num(min_of(s.ratio), 2) + "–" + fmt_num(max_of(s.ratio), 2),
                 describe_requests(s.needed), fmt::format("{} / {}", s.group_reads, s.range_gets)});
      out["results"].push_back({{"store", store->describe()},
                                {"kind", kind},
                                {"fragments", frags},
                                {"root_entries", t->manifest->entries.size()},
                                {"offset", offset},
                                {"prefetch_bytes", o.prefetch_bytes},
                                {"max_ranges_in_flight", o.max_ranges_in_flight},
                                {"load_ms_median", median(s.load)},
                                {"open_ms_median", median(s.open)},
                                {"first_ms_median", median(s.first)},
                                {"reader_ms_median", median(s.total)},
                                {"raw_ms_median", median(s.raw)},
                                {"ratio_median", median(s.ratio)},
                                {"ratio_min", min_of(s.ratio)},
                                {"ratio_max", max_of(s.ratio)},
                                {"raw_requests", s.needed.size()},
                                {"group_reads", s.group_reads},
                                {"range_gets_at_first_record", s.range_gets},
                                {"rounds",
                                 {{"load_ms", s.load},
                                  {"open_ms", s.open},
                                  {"first_ms", s.first},
                                  {"reader_ms", s.total},
                                  {"raw_ms", s.raw}}}});
    }
    client.reset();
    t->finish(*store);
  }
  std::cout << "\nreader = catalog lookup + root GET + decode, StreamReader::open, first "
               "next_records; raw = the same GETs back to back.\n";
  return out;
}

}  // namespace strata::bench
