// docs/METRICS.md against what `strata serve` exposes on /metrics, both
// ways: every metric family a running server writes (its `# TYPE` line)
// has a row with the same type and labels, and every row names a family a
// server writes. The families come from scraping real servers: a node whose
// stream uploads and persists, one whose uploads fail (the families that
// only failures write), and a cluster node over etcd. Each page also
// passes `promtool check metrics`, Prometheus's own parser and linter.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iterator>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "docs/doc_tables.h"
#include "server/stream_client.h"
#include "support/http_get.h"
#include "support/serve_cluster.h"
#include "support/temp_dir.h"

namespace strata::test {
namespace {

using namespace std::chrono_literals;
using namespace proto;

const char* kDoc = "docs/METRICS.md";

struct Family {
  std::string type;
  std::set<std::string> labels;
};
using Families = std::map<std::string, Family>;

// The label names of a sample line's `{a="..",b=".."}` (values may hold
// escaped quotes and commas).
std::set<std::string> label_names(const std::string& line, size_t open) {
  std::set<std::string> out;
  size_t i = open + 1;
  while (i < line.size() && line[i] != '}') {
    size_t eq = line.find('=', i);
    if (eq == std::string::npos) break;
    out.insert(line.substr(i, eq - i));
    i = eq + 2;  // past ="
    while (i < line.size() && line[i] != '"') i += line[i] == '\\' ? 2 : 1;
    i += 1;  // past the closing quote
    if (i < line.size() && line[i] == ',') i += 1;
  }
  return out;
}

// The families of a /metrics text: each `# TYPE` line, and the labels its
// samples carry (a histogram's `le` is the bucket bound, not a label of the
// family).
Families families_of(const std::string& text) {
  Families out;
  std::istringstream in(text);
  std::string line;
  static const std::regex type_re("^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) ([a-z]+)$");
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, type_re)) {
      out[m[1]].type = m[2];
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    size_t end = line.find_first_of("{ ");
    std::string name = line.substr(0, end);
    if (!out.count(name)) {
      for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        std::string s(suffix);
        if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0 &&
            out.count(name.substr(0, name.size() - s.size()))) {
          name = name.substr(0, name.size() - s.size());
          break;
        }
      }
    }
    if (end != std::string::npos && line[end] == '{') {
      for (const auto& l : label_names(line, end)) {
        if (l != "le") out[name].labels.insert(l);
      }
    }
  }
  return out;
}

// Waits until `pred` holds for the server's /metrics text (a server's state
// that nothing here is told about); the last text scraped.
template <class Pred>
std::string scrape_until(const std::string& url, std::chrono::milliseconds timeout, Pred pred) {
  auto end = std::chrono::steady_clock::now() + timeout;
  std::string text;
  for (;;) {
    text = http_get(url + "/metrics", 10s);
    if (pred(text) || std::chrono::steady_clock::now() > end) return text;
    std::this_thread::sleep_for(100ms);
  }
}

bool has(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

// The URL of a serve child's /metrics and /status (started with
// --http 127.0.0.1:0), from its "http on" line.
std::string http_url(ServeProcess& s) { return s.http_url(30s); }

// Creates `stream` and publishes a few messages, each confirmed, then
// subscribes a consumer of a named group without credit (it lags by all of
// them) on the connection it leaves in *out.
void create_and_publish(int port, const std::string& stream, std::optional<StreamClient>* out) {
  auto c = StreamClient::connect(port);
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_TRUE(c->handshake().ok());
  uint32_t corr = c->corr();
  ASSERT_TRUE(c->send(CreateStreamRequest{corr, stream, {}}).ok());
  auto r = c->expect<CreateStreamResponse>();
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->code, ResponseCode::ok);
  ASSERT_TRUE(c->send(DeclarePublisherRequest{c->corr(), 1, "docs", stream}).ok());
  auto d = c->expect<DeclarePublisherResponse>();
  ASSERT_TRUE(d.ok()) << d.error().message;
  ASSERT_EQ(d->code, ResponseCode::ok);
  Bytes storage;
  ASSERT_TRUE(c->send(make_publish(1, 1, {"a", "b", "c"}, &storage)).ok());
  std::set<uint64_t> want = {1, 2, 3};
  while (!want.empty()) {
    auto conf = c->expect<PublishConfirm>();
    ASSERT_TRUE(conf.ok()) << conf.error().message;
    for (uint64_t id : conf->publishing_ids) want.erase(id);
  }
  ASSERT_TRUE(c->send(SubscribeRequest{c->corr(), 1, stream, {OffsetType::first, 0}, 0,
                                       {{"name", "docs-group"}}})
                  .ok());
  auto sub = c->expect<SubscribeResponse>();
  ASSERT_TRUE(sub.ok()) << sub.error().message;
  ASSERT_EQ(sub->code, ResponseCode::ok);
  out->emplace(std::move(c).value());
}

// One `strata serve` on a fresh data directory with fast uploads; if
// `block_uploads`, the object store cannot write under the key prefix (a
// file stands where its directory would be), so every upload fails.
// Returns what /metrics shows once the stream's uploader has persisted (or
// failed).
std::string serve_and_scrape(const std::string& dir, bool block_uploads) {
  std::filesystem::create_directories(dir);
  const std::string data = dir + "/data";
  const std::string cfg = dir + "/serve.json";
  std::ofstream(cfg) << R"({"tiering": {"fragment_max_age_ms": 50, "persist_interval_ms": 50}})";
  if (block_uploads) {
    std::filesystem::create_directories(data + "/objects");
    std::ofstream(data + "/objects/d_strata") << "not a directory";
  }
  ServeProcess s = ServeProcess::start(data, {"--config", cfg, "--http", "127.0.0.1:0"}, dir);
  EXPECT_GT(s.port(), 0) << s.process().stderr_text();
  if (s.port() <= 0) return "";
  const std::string url = http_url(s);
  EXPECT_FALSE(url.empty()) << s.process().stdout_text();
  if (url.empty()) return "";
  std::optional<StreamClient> client;
  create_and_publish(s.port(), "docs", &client);
  // Failing: the first failure counted. Healthy: the first persist.
  const std::string want = block_uploads ? "strata_tier_failures_total{stream=\"docs\""
                                         : "strata_tier_persists_total{stream=\"docs\"} ";
  auto done = [&](const std::string& t) {
    return has(t, want) && (block_uploads || !has(t, want + "0\n"));
  };
  std::string text = scrape_until(url, 60s, done);
  EXPECT_TRUE(done(text)) << "waited for " << want << " in:\n" << text;
  EXPECT_EQ(s.stop(), 0) << s.process().stderr_text();
  return text;
}

// A cluster node (one node over a one-member etcd): the families a cluster
// node writes.
std::string cluster_scrape(const std::string& dir) {
  ServeClusterOptions o;
  o.nodes = 1;
  o.etcd_members = 1;
  const int http_port = free_port();
  o.patch = {{"http", {{"listen", "127.0.0.1:" + std::to_string(http_port)}}}};
  std::string error;
  auto cluster = ServeCluster::start(dir, o, &error);
  EXPECT_TRUE(cluster) << error;
  if (!cluster) return "";
  Status st = cluster->create_stream(0, "docs");
  EXPECT_TRUE(st.ok()) << st.error().message;
  const std::string url = "http://127.0.0.1:" + std::to_string(http_port);
  std::string text = scrape_until(url, 60s, [](const std::string& t) {
    return has(t, "strata_log_next_offset{stream=\"docs\"}");
  });
  EXPECT_TRUE(has(text, "strata_log_next_offset{stream=\"docs\"}")) << text;
  return text;
}

// `promtool check metrics` (Prometheus's parser and linter) on a page:
// "" when it is clean, else what promtool said (or why it could not run).
std::string promtool_check(const std::string& text, const std::string& file) {
  const std::string promtool = STRATA_PROMTOOL;
  if (promtool.empty()) return "promtool not found (Debian's prometheus package: scripts/setup.sh)";
  std::ofstream(file) << text;
  const std::string out = file + ".promtool";
  const int rc = std::system((promtool + " check metrics < " + file + " > " + out + " 2>&1").c_str());
  std::ifstream in(out);
  std::string said((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (rc == 0 && said.empty()) return "";
  return "exit " + std::to_string(rc) + ": " + said;
}

TEST(MetricsDoc, EveryMetricFamilyIsDocumentedAndEveryRowIsExposed) {
  const std::string doc = read_source_file(kDoc);
  ASSERT_FALSE(doc.empty()) << "cannot read " << kDoc;
  std::map<std::string, Family> documented;
  std::map<std::string, int> times;
  for (const auto& row : doc_rows(doc)) {
    // strata's own names, and RabbitMQ's names strata offers too.
    if (row.cells[0].rfind("strata_", 0) != 0 && row.cells[0].rfind("rabbitmq_", 0) != 0) continue;
    ASSERT_GE(row.cells.size(), 3u) << row.cells[0];
    documented[row.cells[0]] = {row.cells[1], comma_list(row.cells[2])};
    times[row.cells[0]] += 1;
  }

  Families exposed;
  TempDir tmp;
  for (const auto& [name, text] :
       {std::pair<std::string, std::string>{"healthy", serve_and_scrape(tmp.sub("healthy"), false)},
        {"failing", serve_and_scrape(tmp.sub("failing"), true)},
        {"cluster", cluster_scrape(tmp.path())}}) {
    ASSERT_FALSE(text.empty()) << "no /metrics from the " << name << " server";
    const std::string lint = promtool_check(text, tmp.sub("metrics-" + name));
    EXPECT_EQ(lint, "") << "promtool check metrics on the " << name << " server's /metrics";
    for (const auto& [f, fam] : families_of(text)) {
      exposed[f].type = fam.type;
      exposed[f].labels.insert(fam.labels.begin(), fam.labels.end());
    }
  }

  for (const auto& [name, fam] : exposed) {
    auto it = documented.find(name);
    if (it == documented.end()) {
      ADD_FAILURE() << "metric `" << name << "` (" << fam.type << ") is exposed on /metrics but "
                    << kDoc << " has no row for it";
      continue;
    }
    EXPECT_EQ(it->second.type, fam.type) << "the type of `" << name << "` in " << kDoc;
    EXPECT_EQ(it->second.labels, fam.labels) << "the labels of `" << name << "` in " << kDoc;
  }
  for (const auto& [name, fam] : documented) {
    EXPECT_TRUE(exposed.count(name))
        << kDoc << " documents metric `" << name << "`, which no server exposed on /metrics "
        << "(gone, renamed or misspelt?)";
    EXPECT_EQ(times[name], 1) << kDoc << " documents `" << name << "` " << times[name] << " times";
  }
}

// deploy/grafana/strata.json, the dashboard an operator imports: every
// metric its queries name is one docs/METRICS.md documents (a histogram's
// _bucket, _sum and _count series too), with labels it has, so a renamed
// metric cannot leave a panel silently empty.
TEST(MetricsDoc, TheGrafanaDashboardQueriesOnlyDocumentedMetricsAndLabels) {
  const std::string doc = read_source_file(kDoc);
  ASSERT_FALSE(doc.empty()) << "cannot read " << kDoc;
  std::map<std::string, Family> documented;
  for (const auto& row : doc_rows(doc)) {
    if (row.cells[0].rfind("strata_", 0) == 0 && row.cells.size() >= 3) {
      documented[row.cells[0]] = {row.cells[1], comma_list(row.cells[2])};
    }
  }
  const char* kDashboard = "deploy/grafana/strata.json";
  const std::string text = read_source_file(kDashboard);
  ASSERT_FALSE(text.empty()) << "cannot read " << kDashboard;
  const auto dash = nlohmann::json::parse(text, nullptr, false);
  ASSERT_FALSE(dash.is_discarded()) << kDashboard << " is not JSON";

  std::vector<std::string> exprs;
  std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& j) {
    if (j.is_object()) {
      for (const auto& [k, v] : j.items()) {
        if ((k == "expr" || k == "definition") && v.is_string()) exprs.push_back(v);
        walk(v);
      }
    } else if (j.is_array()) {
      for (const auto& v : j) walk(v);
    }
  };
  walk(dash);
  ASSERT_GE(exprs.size(), 20u) << "the dashboard has lost its panels";

  // Labels Prometheus adds (instance, job) or a histogram has (le).
  const std::set<std::string> kAlways = {"instance", "job", "le"};
  std::set<std::string> shown;
  const std::regex selector(R"((strata_[a-z0-9_]+)(\{([^}]*)\})?)");
  const std::regex label_name(R"(([a-z_]+)\s*(=~|!~|!=|=))");
  const std::regex by(R"(by \(([^)]*)\))");
  for (const auto& e : exprs) {
    std::set<std::string> labels = kAlways;
    for (std::sregex_iterator m(e.begin(), e.end(), selector), end; m != end; ++m) {
      std::string name = (*m)[1];
      for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        const std::string s(suffix);
        const std::string base =
            name.size() > s.size() ? name.substr(0, name.size() - s.size()) : "";
        if (name.ends_with(s) && documented.count(base) &&
            documented[base].type == "histogram") {
          name = base;
        }
      }
      auto it = documented.find(name);
      if (it == documented.end()) {
        ADD_FAILURE() << kDashboard << " queries `" << (*m)[1] << "`, which " << kDoc
                      << " does not document: " << e;
        continue;
      }
      shown.insert(name);
      labels.insert(it->second.labels.begin(), it->second.labels.end());
      const std::string sel = (*m)[3];
      for (std::sregex_iterator l(sel.begin(), sel.end(), label_name); l != end; ++l) {
        EXPECT_TRUE(kAlways.count((*l)[1]) || it->second.labels.count((*l)[1]))
            << kDashboard << " selects label `" << (*l)[1] << "` of `" << name
            << "`, which it does not have: " << e;
      }
    }
    for (std::sregex_iterator m(e.begin(), e.end(), by), end; m != end; ++m) {
      for (const auto& l : comma_list((*m)[1])) {
        EXPECT_TRUE(labels.count(l)) << kDashboard << " groups by `" << l
                                     << "`, a label none of its metrics has: " << e;
      }
    }
  }
  // What an operator looks at first is on it.
  for (const char* must : {"strata_stream_consumer_max_offset_lag", "strata_tier_unpersisted_tail_bytes",
                           "strata_tier_up", "strata_node_disk_free_bytes", "strata_log_bytes"}) {
    EXPECT_TRUE(shown.count(must)) << kDashboard << " has no panel for `" << must << "`";
  }
}

}  // namespace
}  // namespace strata::test

