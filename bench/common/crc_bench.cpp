// CRC throughput over one 1 MiB buffer (in cache after the first pass):
// zlib's crc32() — what a client library typically uses — against the ISA-L
// CRC32 behind crc32_zlib() and strata's CRC32C. Run with
//   crc_bench --benchmark_repetitions=9 --benchmark_report_aggregates_only=true
// and read bytes_per_second of the medians.
#include <benchmark/benchmark.h>
#include <zlib.h>

#include <string>

#include "common/crc32.h"
#include "common/crc32c.h"
#include "common/random.h"

namespace {

constexpr size_t kSize = 1 << 20;

const std::string& buffer() {
  static const std::string buf = [] {
    strata::Random rng(42);
    std::string b(kSize, '\0');
    for (auto& c : b) c = char(rng.uniform(256));
    return b;
  }();
  return buf;
}

void BM_ZlibCrc32(benchmark::State& st) {
  const auto& b = buffer();
  for (auto _ : st) {
    benchmark::DoNotOptimize(crc32(0, reinterpret_cast<const Bytef*>(b.data()), uInt(b.size())));
  }
  st.SetBytesProcessed(int64_t(st.iterations()) * int64_t(kSize));
}

void BM_IsalCrc32(benchmark::State& st) {
  const auto& b = buffer();
  for (auto _ : st) benchmark::DoNotOptimize(strata::crc32_zlib(strata::BytesView(b)));
  st.SetBytesProcessed(int64_t(st.iterations()) * int64_t(kSize));
}

void BM_Crc32c(benchmark::State& st) {
  const auto& b = buffer();
  for (auto _ : st) benchmark::DoNotOptimize(strata::crc32c::value(b));
  st.SetBytesProcessed(int64_t(st.iterations()) * int64_t(kSize));
}

// Both CRCs of a chunk's data, as the writer computes them: two passes.
void BM_Crc32cThenCrc32(benchmark::State& st) {
  const auto& b = buffer();
  for (auto _ : st) {
    benchmark::DoNotOptimize(strata::crc32c::value(b));
    benchmark::DoNotOptimize(strata::crc32_zlib(strata::BytesView(b)));
  }
  st.SetBytesProcessed(int64_t(st.iterations()) * int64_t(kSize));
}

}  // namespace

BENCHMARK(BM_ZlibCrc32);
BENCHMARK(BM_IsalCrc32);
BENCHMARK(BM_Crc32c);
BENCHMARK(BM_Crc32cThenCrc32);
