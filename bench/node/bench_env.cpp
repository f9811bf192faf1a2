#include "bench_env.h"

#include <dirent.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <latch>
#include <mutex>
#include <sstream>
#include <thread>

#include "objstore/object_store.h"

namespace strata::bench {

Args::Args(int argc, char** argv, int first) {
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) die("unexpected argument " + a);
    std::string name = a.substr(2);
    if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) {
      values_[name] = argv[++i];
    } else {
      values_[name] = "";
    }
  }
}

std::string Args::str(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

double Args::num(const std::string& name, double fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  char* end = nullptr;
  double v = std::strtod(it->second.c_str(), &end);
  if (it->second.empty() || *end != '\0') die("--" + name + " needs a number");
  return v;
}

int64_t Args::integer(const std::string& name, int64_t fallback) const {
  return int64_t(num(name, double(fallback)));
}

bool Args::flag(const std::string& name) const {
  return values_.count(name) > 0;
}

std::vector<std::string> Args::list(const std::string& name, const std::string& fallback) const {
  std::vector<std::string> out;
  std::stringstream ss(str(name, fallback));
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

namespace {
// s3rver processes and scratch directories of this run: die() exits
// without unwinding, so it stops and removes them itself.
std::mutex servers_mu;
std::vector<int> server_pids;
std::vector<std::string> scratch_dirs;
}  // namespace

void remove_on_die(const std::string& dir) {
  std::lock_guard l(servers_mu);
  scratch_dirs.push_back(dir);
}

void die(const std::string& what) {
  std::fprintf(stderr, "node_bench: %s\n", what.c_str());
  {
    std::lock_guard l(servers_mu);
    for (int pid : server_pids) ::kill(pid, SIGKILL);
    for (const auto& d : scratch_dirs) {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  }
  std::exit(1);
}

void must(const Status& s, const std::string& what) {
  if (!s.ok()) die(what + ": " + s.to_string());
}

double secs(Clk::time_point a, Clk::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = size_t(std::ceil(q * double(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

double min_of(const std::vector<double>& v) {
  return v.empty() ? 0 : *std::min_element(v.begin(), v.end());
}

double max_of(const std::vector<double>& v) {
  return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown CPU";
}

int cpu_count() {
  return int(std::thread::hardware_concurrency());
}

double load_average_1m() {
  double l[3] = {0, 0, 0};
  return ::getloadavg(l, 3) > 0 ? l[0] : -1;
}

json machine_json() {
  return {{"cpu", cpu_model()}, {"vcpus", cpu_count()}, {"load_average_1m", load_average_1m()}};
}

void print_machine() {
  std::cout << fmt::format("CPU: {}, {} vCPU; load average (1 min) at start: {:.1f}\n", cpu_model(),
                           cpu_count(), load_average_1m());
}

double process_cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double cpu_of_pid(int pid) {
  if (pid <= 0) return 0;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = s.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(s.substr(close + 2));
  std::string field;
  unsigned long long ut = 0, st = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) ut = std::stoull(field);
    if (i == 15) st = std::stoull(field);
  }
  return double(ut + st) / double(::sysconf(_SC_CLK_TCK));
}

uint64_t rss_bytes() {
  std::ifstream f("/proc/self/statm");
  uint64_t pages = 0, resident = 0;
  f >> pages >> resident;
  return resident * uint64_t(::sysconf(_SC_PAGESIZE));
}

int thread_count() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  }
  return -1;
}

int open_fds() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  if (!d) return -1;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(d);
  return n - 1;  // the directory stream itself
}

void fresh_dir(const std::string& dir) {
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ::sync();
}

void remove_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

// ---- the store under test ----

namespace {

std::string make_temp_dir(const std::string& parent, const std::string& name) {
  std::string tmpl = parent + "/" + name + "-XXXXXX";
  if (!::mkdtemp(tmpl.data())) die("cannot create a directory under " + parent);
  return tmpl;
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

}  // namespace

std::unique_ptr<StoreUnderTest> StoreUnderTest::make(const std::string& kind, const Args& args,
                                                     const std::string& base_dir) {
  std::unique_ptr<StoreUnderTest> s(new StoreUnderTest());
  s->kind_ = kind;
  if (kind == "fs") {
    s->root_ = base_dir + "/objects";
    std::filesystem::create_directories(s->root_);
  } else if (kind == "shm") {
    s->root_ = make_temp_dir("/dev/shm", "strata-node-bench-objects");
    remove_on_die(s->root_);
  } else if (kind == "s3") {
    s->endpoint_ = args.str("s3-endpoint", "");
    s->bucket_ = args.str("s3-bucket", "bench");
    if (s->endpoint_.empty()) {
      s->server_dir_ = make_temp_dir(std::filesystem::exists("/dev/shm") ? "/dev/shm" : base_dir,
                                     "strata-node-bench-s3rver");
      remove_on_die(s->server_dir_);
      std::string err;
      s->server_ = test::S3rver::start({s->server_dir_, {s->bucket_}}, &err);
      if (!s->server_) die("starting s3rver: " + err);
      std::lock_guard l(servers_mu);
      server_pids.push_back(s->server_->pid());
      s->endpoint_ = s->server_->endpoint();
      s->access_key_ = test::S3rver::kAccessKey;
      s->secret_key_ = test::S3rver::kSecretKey;
    } else {
      s->access_key_ = env_or("AWS_ACCESS_KEY_ID", "");
      s->secret_key_ = env_or("AWS_SECRET_ACCESS_KEY", "");
    }
  } else {
    die("unknown store " + kind + " (fs, shm or s3)");
  }
  return s;
}

StoreUnderTest::~StoreUnderTest() {
  if (server_) {
    std::lock_guard l(servers_mu);
    std::erase(server_pids, server_->pid());
  }
  if (server_) server_->stop();
  if (!server_dir_.empty()) remove_dir(server_dir_);
  if (kind_ == "shm") remove_dir(root_);
}

StoreUnderTest::Place StoreUnderTest::place(const std::string& name) {
  Place p;
  if (kind_ == "s3") {
    p.objstore_doc = {{"backend", "s3"},
                      {"s3",
                       {{"endpoint", endpoint_},
                        {"bucket", bucket_},
                        {"access_key_id", access_key_},
                        {"secret_access_key", secret_key_}}}};
    p.key_prefix = "bench/" + name;
    return p;
  }
  p.fs_root = root_ + "/" + name;
  remove_dir(p.fs_root);
  std::filesystem::create_directories(p.fs_root);
  p.objstore_doc = {{"backend", "fs"}, {"fs", {{"root", p.fs_root}}}};
  p.key_prefix = "bench";
  return p;
}

std::unique_ptr<objstore::ObjectStore> StoreUnderTest::open_raw(const Place& p) {
  auto cfg =
      must(objstore::load_config(json{{"objstore", p.objstore_doc}}, objstore::process_env()),
           "object store configuration");
  return must(objstore::open_object_store(cfg), "opening the object store");
}

void StoreUnderTest::clear(const Place& p) {
  if (!p.fs_root.empty()) {
    remove_dir(p.fs_root);
    return;
  }
  auto store = open_raw(p);
  auto all = objstore::list_all(*store, p.key_prefix + "/");
  if (!all.ok()) die("listing " + p.key_prefix + ": " + all.error().to_string());
  std::vector<std::string> keys;
  for (const auto& o : *all) keys.push_back(o.key);
  // s3rver answers 500 when the deletes of one batch race to remove the
  // directory they emptied: such keys are retried.
  for (int attempt = 1; !keys.empty(); ++attempt) {
    std::vector<std::string> again;
    for (auto& r : store->remove_many(keys)) {
      if (r.ok()) continue;
      if (r.error->retry != objstore::RetryClass::transient || attempt == 5) {
        die("removing " + r.key + ": " + r.error->to_string());
      }
      again.push_back(r.key);
    }
    keys = std::move(again);
  }
}

std::string StoreUnderTest::describe() const {
  if (kind_ == "fs") return "directory on the benchmark disk (" + root_ + ")";
  if (kind_ == "shm") return "directory on tmpfs (" + root_ + ")";
  return std::string(server_ ? "s3rver " : "S3 ") + endpoint_ + " bucket " + bucket_;
}

json node_doc(const StoreUnderTest::Place& place) {
  return {{"objstore", place.objstore_doc},
          {"tiering", {{"key_prefix", place.key_prefix}}},
          {"http", {{"listen", ""}}}};
}

std::unique_ptr<node::Node> open_node(const json& doc, const std::string& data_dir) {
  auto cfg =
      must(node::load_node_config(doc, data_dir, objstore::process_env()), "node configuration");
  return must(node::Node::open(cfg), "opening the node");
}

double append_parallel(log::StreamLog& log, int threads, uint64_t batches, size_t batch,
                       size_t record) {
  std::atomic<uint64_t> next{0};
  std::latch ready(threads + 1);
  std::latch go(1);
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      std::string rec(record, char('a' + t));
      std::vector<BytesView> views(batch, rec);
      ready.count_down();
      go.wait();
      while (next.fetch_add(1) < batches) {
        auto r = log.append(std::span<const BytesView>(views));
        if (!r.ok()) die("append: " + r.error().to_string());
      }
    });
  }
  ready.arrive_and_wait();
  auto t0 = Clk::now();
  go.count_down();
  for (auto& t : ts) t.join();
  return secs(t0, Clk::now());
}

std::map<std::string, double> prom_by_label(const std::string& text, const std::string& family,
                                            const std::string& label) {
  std::map<std::string, double> out;
  std::stringstream ss(text);
  std::string line;
  const std::string head = family + "{";
  const std::string key = label + "=\"";
  while (std::getline(ss, line)) {
    if (line.rfind(head, 0) != 0) continue;
    auto close = line.find('}');
    auto at = line.find(key);
    if (close == std::string::npos || at == std::string::npos || at > close) continue;
    auto vstart = at + key.size();
    auto vend = line.find('"', vstart);
    // Only the sample whose one label is `label` (not e.g. a per-class split).
    if (line.find(',', head.size()) < close) continue;
    out[line.substr(vstart, vend - vstart)] = std::stod(line.substr(close + 1));
  }
  return out;
}

void print_row(const std::vector<std::string>& cells) {
  std::string s = "|";
  for (const auto& c : cells) s += " " + c + " |";
  std::cout << s << "\n";
}

std::string fmt_num(double v, int decimals) {
  return fmt::format("{:.{}f}", v, decimals);
}

}  // namespace strata::bench
