// node_bench: whole-process benchmarks of a running node: the upload path
// (docs/BENCHMARKS.md, "Tiering: the upload path") and reading across tiers
// ("Tiering: reading across tiers"). Each subcommand prints
// a markdown table headed by the CPU it ran on; --json adds the figures as
// one JSON document on the last line.
//
//   node_bench hot     [--rounds 5] [--threads 4] [--always-mib 256] [--never-mib 512]
//                      [--policies always,never] [--store shm|fs|s3]
//   node_bench upload  [--gib 1] [--fragment-mib 64] [--rounds 5] [--concurrency 8]
//                      [--stores fs,s3] [--blocking-threads N] [--no-warmup] [--trace]
//                      [--node-only]
//   node_bench ttr     [--seconds 30] [--rate-mib 1] [--fragment-max-age-ms 2000]
//                      [--persist-interval-ms 400] [--stores fs,s3] [--trace]
//   node_bench idle    [--streams 1000] [--idle-seconds 10] [--store fs]
//   node_bench puts    [--gib 2] [--fragment-mib 64] [--persist-threshold 5] [--store fs]
//   node_bench read    [--mib 512] [--rounds 15 (s3: 5)] [--store fs|shm|s3 | --stores a,b]
//                      [--in-flight 4 (s3: 1,2,4,8)] [--range-mib 4] [--prefetch-mib 16]
//                      [--fragment-mib 64] [--segment-mib 32]
//   node_bench first   [--mib 160] [--fragment-kib 64] [--rounds 21] [--variants 16:4,0:1]
//                      [--store fs|shm|s3]
//   node_bench memory  [--mib 256] [--budgets-mib 1,4,16,64] [--rounds 3] [--store fs|shm|s3]
//
// Common: --dir D (scratch space on the disk under test; default $TMPDIR or
// /tmp), --json, --verbose (the node's log lines), and for --store(s) s3:
// --s3-endpoint URL --s3-bucket B (credentials from AWS_ACCESS_KEY_ID /
// AWS_SECRET_ACCESS_KEY); without an endpoint s3rver is started here.
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "bench_env.h"

namespace strata::bench {
json run_hot_path(const Args& args, const std::string& base);
json run_upload(const Args& args, const std::string& base);
json run_time_to_remote(const Args& args, const std::string& base);
json run_idle_streams(const Args& args, const std::string& base);
json run_puts_per_gib(const Args& args, const std::string& base);
json run_read_tiers(const Args& args, const std::string& base);
json run_first_record(const Args& args, const std::string& base);
json run_reader_memory(const Args& args, const std::string& base);
}  // namespace strata::bench

int main(int argc, char** argv) {
  using namespace strata::bench;
  if (argc < 2) {
    std::cerr << "usage: node_bench hot|upload|ttr|idle|puts|read|first|memory [options] (see the "
                 "source)\n";
    return 2;
  }
  const std::string cmd = argv[1];
  Args args(argc, argv, 2);
  spdlog::set_level(args.flag("verbose") ? spdlog::level::info : spdlog::level::warn);
  const char* tmp = std::getenv("TMPDIR");
  std::string parent = args.str("dir", tmp && *tmp ? tmp : "/tmp");
  std::string tmpl = parent + "/strata-node-bench-XXXXXX";
  if (!::mkdtemp(tmpl.data())) die("cannot create a directory under " + parent);
  const std::string base = tmpl;
  remove_on_die(base);

  json out;
  if (cmd == "hot") {
    out = run_hot_path(args, base);
  } else if (cmd == "upload") {
    out = run_upload(args, base);
  } else if (cmd == "ttr") {
    out = run_time_to_remote(args, base);
  } else if (cmd == "idle") {
    out = run_idle_streams(args, base);
  } else if (cmd == "puts") {
    out = run_puts_per_gib(args, base);
  } else if (cmd == "read") {
    out = run_read_tiers(args, base);
  } else if (cmd == "first") {
    out = run_first_record(args, base);
  } else if (cmd == "memory") {
    out = run_reader_memory(args, base);
  } else {
    remove_dir(base);
    die("unknown subcommand " + cmd + " (hot, upload, ttr, idle, puts, read, first, memory)");
  }
  remove_dir(base);
  if (args.flag("json")) std::cout << out.dump() << "\n";
  return 0;
}
