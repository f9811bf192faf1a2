// Uploader core throughput and memory.
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <deque>
#include <stdexcept>

#include "bench_tree.h"
#include "common/crc32c.h"
#include "common/random.h"
#include "tier/uploader_core.h"

namespace strata::tier::bench {
namespace {

using namespace upload;

UploaderConfig bench_config() {
  UploaderConfig c;
  c.stream = "bench-stream";
  c.key_prefix = "strata";
  c.epoch = 1;
  c.random_seed = 7;
  c.max_unpersisted_fragments = 1 << 20;
  return c;
}

UploaderCore make(const Manifest& m = Manifest::empty_at(0), uint64_t revision = 0) {
  auto c = UploaderCore::create(bench_config(), m, revision, "");
  if (!c.ok()) throw std::runtime_error(c.error().to_string());
  return std::move(*c);
}

// Runs the shell's side for one answer: every persist and group upload
// succeeds at once. Returns the events sent.
uint64_t answer(UploaderCore& core, const Effects& fx, int64_t now, uint64_t& revision) {
  uint64_t events = 0;
  for (const Effect& e : fx) {
    if (auto* p = std::get_if<StartPersist>(&e)) {
      auto r = core.on(PersistComplete{p->token, ++revision}, now);
      events += 1 + answer(core, *r, now, revision);
    } else if (auto* g = std::get_if<UploadGroup>(&e)) {
      auto r = core.on(GroupUploadComplete{g->token}, now);
      events += 1 + answer(core, *r, now, revision);
    }
  }
  return events;
}

// Steady state: cut, transfer complete (in order), persist every 5
// fragments, rebalance every 1024: every event the shell would send.
void BM_UploaderCore_Events_InOrder(benchmark::State& state) {
  UploaderCore core = make();
  uint64_t revision = 0, events = 0;
  int64_t now = 0;
  for (auto _ : state) {
    FragmentMeta m{core.next_cut_offset(), core.next_cut_offset() + 100, now, now, 64ull << 20, 64};
    auto cut = core.on(FragmentCut{m}, now);
    const auto& s = std::get<SubmitTransfer>(cut->front());
    auto done = core.on(TransferComplete{s.ref, s.token}, now);
    events += 2 + answer(core, *done, now, revision);
    now += 1;
  }
  state.counters["events_per_second"] =
      benchmark::Counter(double(events), benchmark::Counter::kIsRate);
  state.counters["events_per_fragment"] = double(events) / double(state.iterations());
}
BENCHMARK(BM_UploaderCore_Events_InOrder);

// 1000 transfers in flight completing in random order.
void BM_UploaderCore_Events_1000InFlightRandomOrder(benchmark::State& state) {
  UploaderCore core = make();
  uint64_t revision = 0, events = 0;
  int64_t now = 0;
  Random rng(5);
  std::vector<SubmitTransfer> in_flight;
  auto cut = [&] {
    FragmentMeta m{core.next_cut_offset(), core.next_cut_offset() + 100, now, now, 64ull << 20, 64};
    auto fx = core.on(FragmentCut{m}, now);
    in_flight.push_back(std::get<SubmitTransfer>(fx->front()));
    events += 1;
  };
  for (int i = 0; i < 1000; ++i) cut();
  for (auto _ : state) {
    size_t i = rng.uniform(in_flight.size());
    SubmitTransfer s = in_flight[i];
    in_flight[i] = in_flight.back();
    in_flight.pop_back();
    auto done = core.on(TransferComplete{s.ref, s.token}, now);
    events += 1 + answer(core, *done, now, revision);
    cut();
    now += 1;
  }
  state.counters["events_per_second"] =
      benchmark::Counter(double(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_UploaderCore_Events_1000InFlightRandomOrder);

// The peer: CRC32C over one 64 MiB fragment, which the shell's encoder must
// compute for every fragment anyway (measured on 1 MiB, x64).
void BM_Peer_Crc32c_PerFragment(benchmark::State& state) {
  Bytes buf(1 << 20, 'x');
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = char(i * 31);
  for (auto _ : state) {
    uint32_t c = 0;
    for (int i = 0; i < 64; ++i) c = crc32c::extend(c, buf.data(), buf.size());
    benchmark::DoNotOptimize(c);
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * (64ll << 20));
}
BENCHMARK(BM_Peer_Crc32c_PerFragment)->Unit(benchmark::kMicrosecond);

size_t heap_in_use() {
  struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

// Memory of a core over a persisted manifest of 1 M fragments (one
// mega-group entry at the root: groups are not held) and of 2^20 - 1
// fragments (the largest root below 2^20), with 1000 transfers in flight.
void BM_UploaderCore_Memory_1000InFlight(benchmark::State& state) {
  uint64_t fragments = uint64_t(state.range(0));
  Tree t;
  t.grow(fragments, RebalancePolicy{});
  Manifest root = t.root;
  size_t root_bytes = sizeof(Manifest) + root.entries.capacity() * sizeof(ManifestEntry);
  t.groups.clear();
  size_t core_bytes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    size_t before = heap_in_use();
    state.ResumeTiming();
    {
      auto core = std::make_unique<UploaderCore>(make(root, 1));
      int64_t now = 0;
      for (int i = 0; i < 1000; ++i) {
        FragmentMeta m{
            core->next_cut_offset(), core->next_cut_offset() + 10, now, now, 64ull << 20, 64};
        auto fx = core->on(FragmentCut{m}, now);
        benchmark::DoNotOptimize(fx);
      }
      state.PauseTiming();
      core_bytes = heap_in_use() - before;
      state.ResumeTiming();
    }
  }
  state.counters["root_entries"] = double(root.entries.size());
  state.counters["root_in_memory_bytes"] = double(root_bytes);
  state.counters["core_heap_bytes"] = double(core_bytes);
  state.counters["core_heap_beyond_root_bytes"] = double(core_bytes) - double(root_bytes);
}
BENCHMARK(BM_UploaderCore_Memory_1000InFlight)
    ->Arg(1 << 20)
    ->Arg((1 << 20) - 1)
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace strata::tier::bench
