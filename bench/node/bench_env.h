// What every node_bench subcommand shares: options, the machine's
// description, process counters (CPU, RSS, threads), medians, the object
// store under test (a directory, or an S3 server: s3rver started here or an
// endpoint given), opening a node from a configuration document, and the
// table + JSON output.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "node/node.h"
#include "objstore/config.h"
#include "tier/uploader.h"
#include "support/s3rver.h"

namespace strata::bench {

using json = nlohmann::json;
using Clk = std::chrono::steady_clock;

// --name value pairs and bare --flags, after the subcommand.
class Args {
 public:
  Args(int argc, char** argv, int first);
  std::string str(const std::string& name, const std::string& fallback) const;
  double num(const std::string& name, double fallback) const;
  int64_t integer(const std::string& name, int64_t fallback) const;
  bool flag(const std::string& name) const;
  std::vector<std::string> list(const std::string& name, const std::string& fallback) const;

 private:
  std::map<std::string, std::string> values_;
};

// Prints, stops the s3rver started here, removes the scratch directories
// registered with remove_on_die, and exits 1.
[[noreturn]] void die(const std::string& what);
void remove_on_die(const std::string& dir);
template <typename T>
T must(Result<T> r, const std::string& what) {
  if (!r.ok()) die(what + ": " + r.error().to_string());
  return std::move(r).value();
}
void must(const Status& s, const std::string& what);

double secs(Clk::time_point a, Clk::time_point b);
double median(std::vector<double> v);
// Nearest-rank percentile, q in [0, 1].
double percentile(std::vector<double> v, double q);
double min_of(const std::vector<double>& v);
double max_of(const std::vector<double>& v);

// The machine, for every table: "AMD EPYC, 2 vCPU" and the load average.
std::string cpu_model();
int cpu_count();
double load_average_1m();
json machine_json();
void print_machine();

// This process: user + system CPU seconds (all threads), resident set,
// threads, open file descriptors.
double process_cpu_seconds();
// CPU seconds another process has used (s3rver's), from /proc; 0 if unknown.
double cpu_of_pid(int pid);
uint64_t rss_bytes();
int thread_count();
int open_fds();

// Removes and recreates `dir`, then sync(2): no dirty pages of an earlier
// run are written back while the next one is timed.
void fresh_dir(const std::string& dir);
void remove_dir(const std::string& dir);

// The object store a subcommand writes to.
//  fs   a directory on the benchmark's disk (--dir)
//  shm  a directory on tmpfs (/dev/shm): a store that does not share the
//       local disk, as a remote one would not
//  s3   an S3 server: --s3-endpoint (bucket --s3-bucket, credentials from
//       AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY), or else s3rver started
//       here with its data on /dev/shm
class StoreUnderTest {
 public:
  static std::unique_ptr<StoreUnderTest> make(const std::string& kind, const Args& args,
                                              const std::string& base_dir);
  ~StoreUnderTest();

  const std::string& kind() const { return kind_; }
  // A fresh, empty place for one run: a new directory for fs/shm, a new key
  // prefix for s3. Returns the node's "objstore" section and the key prefix
  // the node must use.
  struct Place {
    json objstore_doc;
    std::string key_prefix;
    std::string fs_root;  // empty for s3
  };
  Place place(const std::string& name);
  // Removes what a run stored there (directory or keys under the prefix).
  void clear(const Place& p);
  // The same store opened directly (no node, no metering).
  std::unique_ptr<objstore::ObjectStore> open_raw(const Place& p);
  std::string describe() const;
  // s3rver's pid (its CPU is not this process's), 0 otherwise.
  int server_pid() const { return server_ ? server_->pid() : 0; }

 private:
  StoreUnderTest() = default;
  std::string kind_;
  std::string root_;  // fs/shm: parent of the run directories
  std::string endpoint_, bucket_, access_key_, secret_key_;
  std::string server_dir_;
  std::unique_ptr<test::S3rver> server_;
};

// A node configuration document with tiering settings scaled for a
// benchmark; callers adjust fields before open_node.
json node_doc(const StoreUnderTest::Place& place);
std::unique_ptr<node::Node> open_node(const json& doc, const std::string& data_dir);

// Appends `batches` batches of `batch` records of `record` bytes from
// `threads` threads (each taking the next batch from a shared count), all
// starting together. Returns the wall seconds from the start to the last
// append's return.
double append_parallel(log::StreamLog& log, int threads, uint64_t batches, size_t batch,
                       size_t record);

// Counter values of one metric family in Prometheus text, by the value of
// label `label` ("strata_objstore_requests_total", "op" -> {put: 17, ...}).
std::map<std::string, double> prom_by_label(const std::string& text, const std::string& family,
                                            const std::string& label);

// Markdown table output.
void print_row(const std::vector<std::string>& cells);
std::string fmt_num(double v, int decimals);

}  // namespace strata::bench
