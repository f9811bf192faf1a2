// Whole-process benchmarks of the local log against the physical peer,
// measured in the same run, interleaved, reported as medians:
//
//   log_bench append [--dir D] [--reps N]   append throughput vs raw write
//                                           (100 B / 1 KiB / 16 KiB records,
//                                           fsync never and always;
//                                           --reserve-ahead B sets the log's
//                                           LogOptions::reserve_ahead_bytes)
//   log_bench read   [--dir D] [--reps N]   sequential read vs raw read of
//                                           the same segment files
//   log_bench rss    [--dir D] [--gib G]    peak RSS writing then reading G GiB
//   log_bench streams [--dir D] [--n N]     RSS with N open streams, one idle
//                                           reader each
//   log_bench encode [--reps N]             user-space cost of building one
//                                           ~256 KiB chunk (ChunkBuilder),
//                                           no I/O: where append CPU goes
//   log_bench overlap [--dir D] [--reps N]  100 B records: would a second
//                                           thread checksumming while the
//                                           body is written lift appends?
//
// Every mode prints a table and one JSON line ("json: {...}") at the end.
#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/crc32.h"
#include "common/endian.h"
#include "log/chunk.h"
#include "log/log_files.h"
#include "log/reader.h"
#include "log/registry.h"
#include "log/stream_log.h"

using namespace strata;
using namespace strata::log;
using json = nlohmann::json;
using Clk = std::chrono::steady_clock;

namespace {

double secs(Clk::time_point a, Clk::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// CPU seconds of the whole process (every thread, user + system).
double process_cpu() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto tv = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) * 1e-6; };
  return tv(u.ru_utime) + tv(u.ru_stime);
}
// The process CPU seconds of the last timed append region (log or raw):
// on a machine shared with other work, wall time measures the load as much
// as the writer, CPU time much less.
double g_last_cpu = 0;
// LogOptions::reserve_ahead_bytes of the appending log and of the peer that
// reserves like it (--reserve-ahead; 0 compares with the log not reserving).
uint64_t g_reserve_ahead = LogOptions{}.reserve_ahead_bytes;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

uint64_t peak_rss_kib() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return uint64_t(ru.ru_maxrss);
}

uint64_t current_rss_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6));
  }
  return 0;
}

void die(const std::string& what) {
  std::fprintf(stderr, "log_bench: %s\n", what.c_str());
  std::exit(1);
}

template <typename T>
T must(Result<T> r, const char* what) {
  if (!r.ok()) die(fmt::format("{}: {}", what, r.error().to_string()));
  return std::move(r).value();
}

void must(Status s, const char* what) {
  if (!s.ok()) die(fmt::format("{}: {}", what, s.to_string()));
}

// Fresh directory, and no dirty pages of an earlier run still being written
// back while the next run is timed.
void reset_dir(const std::string& d) {
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  ::sync();
}

// ------------------------------------------------------------------ append

struct AppendCase {
  size_t record_size;
  size_t batch;  // records per append (~256 KiB of data per chunk)
  FsyncPolicy policy;
  uint64_t total_bytes;  // payload per run
};

// Appends total_bytes of records in batches; returns seconds and the sizes
// of the chunks written (for the raw peer).
double run_log_append(const std::string& dir, const AppendCase& c,
                      std::vector<size_t>* chunk_sizes) {
  reset_dir(dir);
  LogOptions o;
  o.create_if_missing = true;
  o.fsync = c.policy;
  o.reserve_ahead_bytes = g_reserve_ahead;
  auto log = must(StreamLog::open(dir + "/s", o), "open");
  std::string rec(c.record_size, 'r');
  std::vector<BytesView> batch(c.batch, rec);
  uint64_t batches = c.total_bytes / (c.record_size * c.batch);
  const double c0 = process_cpu();
  auto t0 = Clk::now();
  for (uint64_t b = 0; b < batches; ++b) must(log->append(batch), "append");
  auto t1 = Clk::now();
  g_last_cpu = process_cpu() - c0;
  if (chunk_sizes) {
    chunk_sizes->assign(batches, kChunkHeaderSize + c.batch * (kEntryHeaderSize + c.record_size));
  }
  must(log->close(), "close");
  return secs(t0, t1);
}

// The same bytes, one write(2) per chunk: an fdatasync per chunk under
// `always`, and at every point where the log rolls to a new segment an
// inline seal (fsync of the sealed segment, next file with a 24-byte
// header, fsync of it and of the directory) — the log's sync pattern under
// `always` and `interval`. With `segment_sync` false the peer never syncs
// at all: the peer for `never`, under which the log seals in the
// background and syncs nothing on the append path (the goal is stated
// against this one; the timed region ends with the last append, so it
// includes the background seal of the first segment but not close()).
// With `reserve` the peer also allocates its file's space ahead of its
// writes as the log does (LogOptions::reserve_ahead_bytes, same rule): the
// peer that isolates what the log adds beyond the file layout.
double run_raw_append(const std::string& dir, const AppendCase& c, const std::vector<size_t>& sizes,
                      bool segment_sync = true, bool reserve = false) {
  reset_dir(dir);
  const uint64_t max_segment = LogOptions{}.max_segment_bytes;
  int seg = 0;
  auto open_next = [&] {
    std::string path = fmt::format("{}/raw{}", dir, seg++);
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) die("open raw");
    return fd;
  };
  int fd = open_next();
  std::string header(kFileHeaderSize, 'h');
  std::string buf(sizes.empty() ? 0 : sizes[0], 'r');
  uint64_t pos = kFileHeaderSize;
  uint64_t in_segment = 0;
  uint64_t reserved = 0;
  const double c0 = process_cpu();
  auto t0 = Clk::now();
  if (::write(fd, header.data(), header.size()) != ssize_t(header.size())) die("raw write");
  for (size_t s : sizes) {
    if (segment_sync && in_segment > 0 && pos + s > max_segment) {
      if (::fdatasync(fd) != 0) die("raw fdatasync");
      ::close(fd);
      fd = open_next();
      if (::write(fd, header.data(), header.size()) != ssize_t(header.size())) die("raw write");
      if (::fdatasync(fd) != 0) die("raw fdatasync");
      int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      ::fsync(dfd);
      ::close(dfd);
      pos = kFileHeaderSize;
      in_segment = 0;
      reserved = 0;
    }
    if (reserve && g_reserve_ahead > 0 && pos + s > reserved) {
      const uint64_t to = reserve_ahead_to(pos + s, g_reserve_ahead, max_segment);
      if (::fallocate(fd, FALLOC_FL_KEEP_SIZE, off_t(pos), off_t(to - pos)) != 0) die("fallocate");
      reserved = to;
    }
    if (::write(fd, buf.data(), s) != ssize_t(s)) die("raw write");
    if (c.policy != FsyncPolicy::never && ::fdatasync(fd) != 0) die("raw fdatasync");
    pos += s;
    ++in_segment;
  }
  auto t1 = Clk::now();
  g_last_cpu = process_cpu() - c0;
  ::fdatasync(fd);
  ::close(fd);
  return secs(t0, t1);
}

// `only` empty: both policies; else just the named one ("never", "always").
json bench_append(const std::string& dir, int reps, const std::string& only) {
  std::vector<AppendCase> cases;
  for (auto policy : {FsyncPolicy::never, FsyncPolicy::always}) {
    if (!only.empty() && only != fsync_policy_name(policy)) continue;
    for (size_t size : {size_t(100), size_t(1024), size_t(16384)}) {
      size_t batch = std::max<size_t>(1, (256 << 10) / size);
      uint64_t total = policy == FsyncPolicy::never ? (512ull << 20) : (128ull << 20);
      cases.push_back({size, batch, policy, total});
    }
  }
  json out = json::array();
  std::printf("%-8s %-7s %8s %12s %12s %12s %8s\n", "fsync", "record", "batch", "log MB/s",
              "log rec/s", "raw MB/s", "ratio");
  for (const auto& c : cases) {
    std::vector<double> tl, tr, tn, tp, cl, cn;
    std::vector<size_t> sizes;
    auto log_run = [&] {
      tl.push_back(run_log_append(dir, c, &sizes));
      cl.push_back(g_last_cpu);
    };
    for (int r = 0; r < reps; ++r) {
      // Alternate which goes first so drift (page cache, other load) hits both.
      if (r % 2 == 0) {
        log_run();
        tr.push_back(run_raw_append(dir, c, sizes));
      } else {
        tr.push_back(run_raw_append(dir, c, sizes));
        log_run();
      }
      if (c.policy == FsyncPolicy::never) {
        tn.push_back(run_raw_append(dir, c, sizes, false));
        cn.push_back(g_last_cpu);
        tp.push_back(run_raw_append(dir, c, sizes, false, true));
      }
    }
    uint64_t batches = c.total_bytes / (c.record_size * c.batch);
    uint64_t payload = batches * c.batch * c.record_size;
    uint64_t disk = 0;
    for (size_t s : sizes) disk += s;
    double ml = median(tl), mr = median(tr);
    // Ratio over the same bytes: raw time / log time.
    double ratio = mr / ml;
    double mn = tn.empty() ? 0 : median(tn);
    double mp = tp.empty() ? 0 : median(tp);
    std::printf("%-8s %-7zu %8zu %12.1f %12.0f %12.1f %8.3f %s\n",
                std::string(fsync_policy_name(c.policy)).c_str(), c.record_size, c.batch,
                disk / ml / 1e6, batches * c.batch / ml, disk / mr / 1e6, ratio,
                tn.empty() ? ""
                           : fmt::format("(raw without roll fsyncs {:.1f} MB/s, ratio {:.3f}; "
                                         "CPU s raw {:.3f} / log {:.3f}, ratio {:.3f}; "
                                         "raw reserving like the log {:.1f} MB/s, ratio {:.3f})",
                                         disk / mn / 1e6, mn / ml, median(cn), median(cl),
                                         median(cn) / median(cl), disk / mp / 1e6, mp / ml)
                                 .c_str());
    std::fflush(stdout);
    out.push_back({{"fsync", fsync_policy_name(c.policy)},
                   {"record_size", c.record_size},
                   {"batch", c.batch},
                   {"payload_bytes", payload},
                   {"chunk_bytes", disk},
                   {"log_seconds_median", ml},
                   {"raw_seconds_median", mr},
                   {"log_mb_per_s", disk / ml / 1e6},
                   {"log_payload_mb_per_s", payload / ml / 1e6},
                   {"log_records_per_s", batches * c.batch / ml},
                   {"raw_mb_per_s", disk / mr / 1e6},
                   {"ratio", ratio},
                   {"raw_unsynced_mb_per_s", tn.empty() ? 0.0 : disk / mn / 1e6},
                   {"ratio_vs_raw_unsynced", tn.empty() ? 0.0 : mn / ml},
                   {"raw_reserving_mb_per_s", tp.empty() ? 0.0 : disk / mp / 1e6},
                   {"ratio_vs_raw_reserving", tp.empty() ? 0.0 : mp / ml},
                   {"log_cpu_seconds_median", median(cl)},
                   {"raw_unsynced_cpu_seconds_median", cn.empty() ? 0.0 : median(cn)},
                   {"cpu_ratio_vs_raw_unsynced", cn.empty() ? 0.0 : median(cn) / median(cl)},
                   {"reps", reps}});
  }
  return out;
}

// ------------------------------------------------------------------ encode

// Builds the chunks of the append cases into one reused buffer, as the
// writer does (records copied, both CRCs), without I/O: microseconds per
// ~256 KiB chunk, the user-space share of an append.
json bench_encode(int reps) {
  json out = json::array();
  std::printf("%-7s %8s %14s %12s\n", "record", "batch", "CPU us/chunk", "GB/s");
  for (size_t size : {size_t(100), size_t(1024), size_t(16384)}) {
    const size_t batch = std::max<size_t>(1, (256 << 10) / size);
    std::string rec(size, 'r');
    std::vector<BytesView> records(batch, rec);
    Bytes buf;
    const int chunks = 2000;
    std::vector<double> t;
    // Thread CPU time: the figure other load on the machine cannot inflate.
    auto cpu = [] {
      timespec ts{};
      ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
      return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
    };
    for (int r = 0; r < std::max(reps, 1); ++r) {
      const double t0 = cpu();
      for (int i = 0; i < chunks; ++i) {
        buf.clear();
        ChunkBuilder b(&buf);
        b.begin();
        b.add_records(records);
        b.finish(uint64_t(i) * batch, 1, 0);
      }
      t.push_back((cpu() - t0) / chunks);
    }
    const double m = median(t);
    std::printf("%-7zu %8zu %14.2f %12.2f\n", size, batch, m * 1e6, buf.size() / m / 1e9);
    out.push_back({{"record_size", size},
                   {"batch", batch},
                   {"us_per_chunk", m * 1e6},
                   {"chunk_bytes", buf.size()}});
  }
  return out;
}

// ------------------------------------------------------------------ overlap

// Against a raw writer that reserves its space as the log does, 100 B
// appends reach ~0.7 because each chunk is copied and checksummed on the
// appending thread before its write(2) (docs/BENCHMARKS.md). This measures
// the way out that would keep the format: copy the records,
// hand the CRC to a second thread while the body is written, then pwrite
// the 48-byte header. Per ~256 KiB chunk of 100 B records, into a file in
// `dir`, alternating: (a) inline, ChunkBuilder then one write; (b) the CRC
// on a helper thread (condition variable) overlapped with the body's write,
// then the header; (c) the raw peer, one write of a ready buffer.
json bench_overlap(const std::string& dir, int reps) {
  reset_dir(dir);
  const size_t size = 100, batch = (256 << 10) / size;
  const uint64_t total = 512ull << 20;
  const size_t chunks = total / (size * batch);
  std::string rec(size, 'r');
  std::vector<BytesView> records(batch, rec);
  Bytes buf;
  std::mutex mu;
  std::condition_variable ask, answer;
  uint64_t job = 0, done = 0;
  uint32_t crc = 0;
  bool quit = false;
  std::thread helper([&] {
    std::unique_lock l(mu);
    for (uint64_t seen = 0;;) {
      ask.wait(l, [&] { return quit || job != seen; });
      if (quit) return;
      seen = job;
      l.unlock();
      const uint32_t c = crc32_zlib(buf.data() + kChunkHeaderSize, buf.size() - kChunkHeaderSize);
      l.lock();
      crc = c;
      done = seen;
      answer.notify_one();
    }
  });
  auto run = [&](int mode) {
    const std::string path = dir + "/overlap";
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) die("open " + path);
    uint64_t pos = 0;
    auto t0 = Clk::now();
    for (size_t c = 0; c < chunks; ++c) {
      if (mode == 0 || buf.empty()) {
        buf.clear();
        ChunkBuilder b(&buf);
        b.begin();
        b.add_records(records);
        b.finish(c * batch, 1, 0);
      }
      if (mode == 1) {
        // The records copied again (as the writer would), the CRC elsewhere.
        char* p = buf.data() + kChunkHeaderSize;
        for (const BytesView& r : records) {
          put_be32(reinterpret_cast<uint8_t*>(p), uint32_t(r.size()));
          std::memcpy(p + kEntryHeaderSize, r.data(), r.size());
          p += kEntryHeaderSize + r.size();
        }
        {
          std::lock_guard l(mu);
          job += 1;
        }
        ask.notify_one();
        const size_t body = buf.size() - kChunkHeaderSize;
        if (::pwrite(fd, buf.data() + kChunkHeaderSize, body, off_t(pos + kChunkHeaderSize)) !=
            ssize_t(body)) {
          die("overlap body write");
        }
        {
          std::unique_lock l(mu);
          answer.wait(l, [&] { return done == job; });
        }
        std::memcpy(buf.data() + 8, &crc, 4);  // stands for the header's CRC fields
        if (::pwrite(fd, buf.data(), kChunkHeaderSize, off_t(pos)) != ssize_t(kChunkHeaderSize)) {
          die("overlap header write");
        }
      } else if (::write(fd, buf.data(), buf.size()) != ssize_t(buf.size())) {
        die("overlap write");
      }
      pos += buf.size();
    }
    const double t = secs(t0, Clk::now());
    ::close(fd);
    return double(pos) / t / 1e6;
  };
  const char* names[] = {"inline (ChunkBuilder, write)", "CRC on a helper, overlapped",
                         "raw write of a ready buffer"};
  std::vector<double> mb[3];
  run(0);  // warm-up
  for (int r = 0; r < std::max(reps, 1); ++r) {
    for (int m = 0; m < 3; ++m) mb[m].push_back(run(m));
  }
  {
    std::lock_guard l(mu);
    quit = true;
  }
  ask.notify_one();
  helper.join();
  json out = json::object();
  for (int m = 0; m < 3; ++m) {
    const double v = median(mb[m]);
    std::printf("%-30s %8.0f MB/s  ratio to raw %.3f\n", names[m], v, v / median(mb[2]));
    out[m == 0 ? "inline_mb_s" : m == 1 ? "helper_mb_s" : "raw_mb_s"] = v;
  }
  return out;
}

// ------------------------------------------------------------------ read

struct ReadResult {
  double seconds;
  uint64_t bytes;
};

ReadResult raw_read(const std::vector<std::string>& files) {
  std::string buf(1 << 20, '\0');
  uint64_t total = 0;
  auto t0 = Clk::now();
  for (const auto& f : files) {
    int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) die("open segment");
    ssize_t n;
    while ((n = ::read(fd, buf.data(), buf.size())) > 0) total += uint64_t(n);
    ::close(fd);
  }
  return {secs(t0, Clk::now()), total};
}

ReadResult log_read(StreamLog& log, bool verify, bool records) {
  ReaderOptions ro;
  ro.verify_crc = verify;
  auto r = must(log.open_reader(OffsetSpec::first(), ro), "reader");
  uint64_t bytes = 0;
  std::vector<Record> recs;
  auto t0 = Clk::now();
  if (records) {
    while (true) {
      recs.clear();
      size_t n = must(r->next_records(&recs), "read");
      if (n == 0) break;
      for (const auto& x : recs) bytes += x.value.size();
    }
  } else {
    while (true) {
      auto c = must(r->next_chunk(), "read");
      if (!c) break;
      bytes += c->bytes.size();
    }
  }
  return {secs(t0, Clk::now()), bytes};
}

json bench_read(const std::string& dir, int reps, uint64_t gib_eighths) {
  reset_dir(dir);
  LogOptions o;
  o.create_if_missing = true;
  o.fsync = FsyncPolicy::never;
  auto log = must(StreamLog::open(dir + "/s", o), "open");
  std::string rec(1024, 'x');
  std::vector<BytesView> batch(256, rec);
  uint64_t total = gib_eighths << 27;
  for (uint64_t w = 0; w < total; w += 256 * 1024) must(log->append(batch), "append");
  must(log->close(), "close");
  log = must(StreamLog::open(dir + "/s", o), "reopen");
  std::vector<std::string> files;
  uint64_t file_bytes = 0;
  for (const auto& s : log->segments()) {
    files.push_back(s.file);
    file_bytes += s.size_bytes;
  }
  // Warm the page cache so both read from memory.
  raw_read(files);
  std::vector<double> traw, tchunk, tchunk_nov, trec;
  for (int r = 0; r < reps; ++r) {
    traw.push_back(raw_read(files).seconds);
    tchunk.push_back(log_read(*log, true, false).seconds);
    tchunk_nov.push_back(log_read(*log, false, false).seconds);
    trec.push_back(log_read(*log, true, true).seconds);
  }
  double mraw = median(traw);
  auto row = [&](const char* what, double m) {
    std::printf("%-34s %10.1f MB/s  ratio %.3f\n", what, file_bytes / m / 1e6, mraw / m);
    return json{{"what", what},
                {"seconds_median", m},
                {"mb_per_s", file_bytes / m / 1e6},
                {"ratio", mraw / m}};
  };
  std::printf("segment bytes: %llu in %zu files, %d reps (page cache warm)\n",
              (unsigned long long)file_bytes, files.size(), reps);
  json out = {{"segment_bytes", file_bytes}, {"segments", files.size()}, {"reps", reps}};
  out["raw"] = row("raw read (1 MiB read(2))", mraw);
  out["chunks_verified"] = row("log chunks, CRC verified", median(tchunk));
  out["chunks_unverified"] = row("log chunks, no CRC", median(tchunk_nov));
  out["records_verified"] = row("log records, CRC verified", median(trec));
  return out;
}

// ------------------------------------------------------------------ memory

json bench_rss(const std::string& dir, uint64_t gib) {
  reset_dir(dir);
  uint64_t start = current_rss_kib();
  LogOptions o;
  o.create_if_missing = true;
  o.fsync = FsyncPolicy::never;
  auto log = must(StreamLog::open(dir + "/s", o), "open");
  std::string rec(1024, 'm');
  std::vector<BytesView> batch(1024, rec);
  uint64_t total = gib << 30, written = 0;
  auto t0 = Clk::now();
  for (; written < total; written += 1024 * 1024) must(log->append(batch), "append");
  auto t1 = Clk::now();
  uint64_t after_write = peak_rss_kib();
  auto rr = log_read(*log, true, true);
  uint64_t peak = peak_rss_kib();
  must(log->close(), "close");
  std::printf("wrote %.2f GiB in %.2f s, read back %.2f GiB in %.2f s\n", written / double(1 << 30),
              secs(t0, t1), rr.bytes / double(1 << 30), rr.seconds);
  std::printf(
      "RSS at start %.1f MiB, peak after write %.1f MiB, peak after read %.1f MiB (goal < 64)\n",
      start / 1024.0, after_write / 1024.0, peak / 1024.0);
  reset_dir(dir);
  return {{"bytes_written", written},        {"bytes_read", rr.bytes},
          {"rss_start_mib", start / 1024.0}, {"peak_rss_after_write_mib", after_write / 1024.0},
          {"peak_rss_mib", peak / 1024.0},   {"goal_mib", 64}};
}

json bench_streams(const std::string& dir, int n) {
  reset_dir(dir);
  uint64_t start = current_rss_kib();
  LogOptions o;
  o.fsync = FsyncPolicy::never;
  auto reg = must(StreamRegistry::open(dir + "/data", o), "registry");
  std::vector<std::shared_ptr<StreamLog>> logs;
  std::vector<std::unique_ptr<Reader>> readers;
  auto t0 = Clk::now();
  for (int i = 0; i < n; ++i) {
    auto log = must(reg->create(fmt::format("stream-{:04}", i)), "create");
    std::string v = fmt::format("hello {}", i);
    must(log->append({v}), "append");
    auto r = must(log->open_reader(OffsetSpec::first()), "reader");
    std::vector<Record> recs;
    if (must(r->next_records(&recs), "read") != 1) die("first record missing");
    // Now idle at the committed end, as a caught-up consumer is.
    logs.push_back(log);
    readers.push_back(std::move(r));
  }
  double created = secs(t0, Clk::now());
  uint64_t now = current_rss_kib(), peak = peak_rss_kib();
  std::printf("%d streams created, each with one record and an idle reader, in %.2f s\n", n,
              created);
  std::printf(
      "RSS at start %.1f MiB, with %d open streams + idle readers %.1f MiB (peak %.1f MiB, goal < "
      "128)\n",
      start / 1024.0, n, now / 1024.0, peak / 1024.0);
  // The readers still work: one append wakes the reader of that stream.
  must(logs[n / 2]->append({"wake"}), "append");
  if (!readers[size_t(n / 2)]->wait(std::chrono::seconds(5))) die("reader did not wake");
  readers.clear();
  logs.clear();
  must(reg->close_all(), "close");
  reset_dir(dir);
  return {{"streams", n},
          {"rss_start_mib", start / 1024.0},
          {"rss_mib", now / 1024.0},
          {"peak_rss_mib", peak / 1024.0},
          {"goal_mib", 128}};
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn);
  if (argc < 2) {
    std::fprintf(
        stderr,
        "usage: %s append|read|rss|streams|encode|overlap [--dir D] [--reps N] [--gib G] [--n N] "
        "[--fsync never|always] [--reserve-ahead BYTES]\n",
        argv[0]);
    return 2;
  }
  std::string mode = argv[1];
  std::string dir = "/tmp/strata-log-bench";
  int reps = 5, n = 1000;
  uint64_t gib = 1;
  uint64_t read_eighths = 8;  // 1 GiB
  std::string only_fsync;     // append: one policy only
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--dir")
      dir = v;
    else if (k == "--reps")
      reps = std::stoi(v);
    else if (k == "--gib")
      gib = std::stoull(v);
    else if (k == "--n")
      n = std::stoi(v);
    else if (k == "--fsync")
      only_fsync = v;
    else if (k == "--reserve-ahead")
      g_reserve_ahead = std::stoull(v);
    else if (k == "--read-eighths")
      read_eighths = std::stoull(v);
    else
      die("unknown option " + k);
  }
  json j;
  if (mode == "append") {
    j = {{"append", bench_append(dir, reps, only_fsync)}};
  } else if (mode == "read") {
    j = {{"read", bench_read(dir, reps, read_eighths)}};
  } else if (mode == "rss") {
    j = {{"rss", bench_rss(dir, gib)}};
  } else if (mode == "encode") {
    j = {{"encode", bench_encode(reps)}};
  } else if (mode == "overlap") {
    j = {{"overlap", bench_overlap(dir, reps)}};
  } else if (mode == "streams") {
    j = {{"streams", bench_streams(dir, n)}};
  } else {
    die("unknown mode " + mode);
  }
  std::filesystem::remove_all(dir);
  std::printf("json: %s\n", j.dump().c_str());
  return 0;
}
