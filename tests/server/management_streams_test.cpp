// Streams and connections administered live through the management API
// (server/management_streams.h) and the CLI over it: `strata list
// streams`, `strata stream create|alter|delete` without --config, `strata
// connection close`; a monitoring user reads and changes nothing.
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "common/version.h"
#include "server/admin_http.h"
#include "server/serve_fixture.h"
#include "support/cli.h"
#include "support/eventually.h"
#include "support/http_get.h"

namespace strata::test {
namespace {

class ManagementStreamsTest : public ServeTest {
 protected:
  void SetUp() override {
    ServeTest::SetUp();
    restart_with_config("users.json", R"({
      "users": [ {"name": "guest", "password": "guest", "tags": ["administrator"]},
                 {"name": "mon", "password": "m0n", "tags": ["monitoring"]} ],
      "permissions": [
        {"user": "guest", "vhost": "/", "configure": ".*", "write": ".*", "read": ".*"},
        {"user": "mon", "vhost": "/", "configure": "", "write": "", "read": ".*"} ]
    })",
                        {"--http", "127.0.0.1:0"});
    url_ = serve_http_url(server_);
    ASSERT_FALSE(url_.empty()) << server_.process().stdout_text();
    admin_pw_ = dir_.sub("guest.pw");
    std::ofstream(admin_pw_) << "guest\n";
    mon_pw_ = dir_.sub("mon.pw");
    std::ofstream(mon_pw_) << "m0n\n";
  }
  CliOut as_admin(std::vector<std::string> args) {
    args.insert(args.end(), {"--node", url_, "--admin-password-file", admin_pw_});
    return strata_cli(args);
  }
  CliOut as_monitor(std::vector<std::string> args) {
    args.insert(args.end(),
                {"--node", url_, "--admin-user", "mon", "--admin-password-file", mon_pw_});
    return strata_cli(args);
  }
  std::map<std::string, nlohmann::json> streams() {
    auto out = as_monitor({"--json", "list", "streams"});
    EXPECT_EQ(out.status, 0) << out.err;
    std::map<std::string, nlohmann::json> by_name;
    const auto doc = nlohmann::json::parse(out.out, nullptr, false);
    for (const auto& s : doc["streams"]) by_name[s["name"].get<std::string>()] = s;
    return by_name;
  }

  std::string url_, admin_pw_, mon_pw_;
};

TEST_F(ManagementStreamsTest, StreamsAreCreatedListedAndDeletedOnTheRunningNode) {
  auto made = as_admin(
      {"--json", "stream", "create", "live-1", "--max-age", "7D", "--x-strata-confirm", "remote"});
  ASSERT_EQ(made.status, 0) << made.err;
  EXPECT_EQ(nlohmann::json::parse(made.out)["created"], true) << made.out;
  // The same arguments again: there already; other arguments: refused.
  auto again = as_admin(
      {"--json", "stream", "create", "live-1", "--max-age", "7D", "--x-strata-confirm", "remote"});
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(nlohmann::json::parse(again.out)["created"], false) << again.out;
  auto other = as_admin({"stream", "create", "live-1", "--max-age", "1D"});
  EXPECT_EQ(other.status, 1);
  EXPECT_NE(other.err.find("live-1"), std::string::npos) << other.err;
  auto bad = as_admin({"stream", "create", "live-2", "--max-age", "soon"});
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("max-age"), std::string::npos) << bad.err;

  // A client sees it at once, and writes to it.
  StreamClient c = open_client();
  declare(c, 1, "live-1", "ref-1");
  publish_confirmed(c, 1, 0, {"a", "b", "c", "d"});
  ASSERT_TRUE(c.send(SubscribeRequest{c.corr(), 2, "live-1", {OffsetType::first, 0}, 0, {}}).ok());
  ASSERT_EQ(c.expect<SubscribeResponse>()->code, ResponseCode::ok);

  auto all = streams();
  ASSERT_TRUE(all.count("live-1")) << as_monitor({"--json", "list", "streams"}).out;
  const auto& s = all["live-1"];
  EXPECT_EQ(s["vhost"], "/");
  EXPECT_EQ(s["type"], "stream");
  EXPECT_EQ(s["served_here"], true);
  EXPECT_EQ(s["arguments"]["x-max-age"], "604800s") << s.dump();
  EXPECT_EQ(s["arguments"]["x-strata-confirm"], "remote") << s.dump();
  EXPECT_EQ(s["messages"], 4) << s.dump();
  EXPECT_EQ(s["next_offset"], 4) << s.dump();
  EXPECT_GT(s["local"]["bytes"].get<uint64_t>(), 0u) << s.dump();
  EXPECT_EQ(s["publishers"], 1) << s.dump();
  EXPECT_EQ(s["consumers"], 1) << s.dump();
  // The consumer has no credit: it lags by all four.
  EXPECT_EQ(s["consumer_max_lag"], 4) << s.dump();
  auto one = server::api_request(url_, {"GET", "/api/streams/live-1", "", "mon", "m0n"});
  ASSERT_TRUE(one.ok()) << one.error().message;
  ASSERT_EQ(one->status, 200) << one->body;
  EXPECT_EQ(nlohmann::json::parse(one->body)["name"], "live-1");
  auto none = server::api_request(url_, {"GET", "/api/streams/nope", "", "mon", "m0n"});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->status, 404);
  // And Prometheus sees the same per stream.
  const std::string metrics = serve_http_get(server_, "/metrics");
  EXPECT_NE(metrics.find("strata_stream_consumer_max_offset_lag{stream=\"live-1\"} 4"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("strata_stream_publishers{stream=\"live-1\"} 1"), std::string::npos);
  EXPECT_NE(metrics.find("strata_stream_consumers{stream=\"live-1\"} 1"), std::string::npos);
  // The text form names the columns.
  auto text = as_monitor({"list", "streams"});
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("name=live-1"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("consumer_max_lag=4"), std::string::npos) << text.out;

  // A monitoring user changes nothing.
  auto refused = as_monitor({"stream", "delete", "live-1"});
  EXPECT_EQ(refused.status, 1);
  EXPECT_NE(refused.err.find("HTTP 403"), std::string::npos) << refused.err;

  auto gone = as_admin({"stream", "delete", "live-1"});
  ASSERT_EQ(gone.status, 0) << gone.err;
  EXPECT_FALSE(streams().count("live-1"));
  auto again_gone = as_admin({"stream", "delete", "live-1"});
  EXPECT_EQ(again_gone.status, 1);
  EXPECT_NE(again_gone.err.find("HTTP 404"), std::string::npos) << again_gone.err;
}

// The value of one sample of a Prometheus page ("name{labels}"), or -1.
double sample(const std::string& page, const std::string& series) {
  const std::string line = "\n" + series + " ";
  const size_t at = page.find(line);
  if (at == std::string::npos) return -1;
  return std::stod(page.substr(at + line.size()));
}

// Errors by protocol code (and publish errors by message), records
// delivered, the writer and the build, under strata's names and under
// RabbitMQ's rabbitmq_prometheus names with the same meaning.
TEST_F(ManagementStreamsTest, MetricsCountErrorsByCodeUnderBothNames) {
  StreamClient c = open_client();
  create(c, "m-1");
  declare(c, 1, "m-1");
  publish_confirmed(c, 1, 0, {"a", "b", "c"});
  // Two answers with code 2, one PublishError of 2 messages (code 18).
  declare(c, 2, "missing", "", ResponseCode::stream_does_not_exist);
  ASSERT_TRUE(c.send(SubscribeRequest{c.corr(), 5, "missing", {OffsetType::first, 0}, 1, {}}).ok());
  ASSERT_EQ(c.expect<SubscribeResponse>()->code, ResponseCode::stream_does_not_exist);
  Bytes storage;
  ASSERT_TRUE(c.send(make_publish(9, 1, {"x", "y"}, &storage)).ok());
  ASSERT_EQ(c.expect<PublishError>()->errors.size(), 2u);
  ASSERT_TRUE(c.send(SubscribeRequest{c.corr(), 6, "m-1", {OffsetType::first, 0}, 5, {}}).ok());
  ASSERT_EQ(c.expect<SubscribeResponse>()->code, ResponseCode::ok);
  ASSERT_EQ(consume(c, 6, 3).size(), 3u);

  const std::string m = serve_http_get(server_, "/metrics");
  EXPECT_EQ(sample(m, R"(strata_server_errors_total{code="2",reason="stream_does_not_exist"})"), 2)
      << m;
  EXPECT_EQ(
      sample(m, R"(rabbitmq_global_stream_error_stream_does_not_exist_total{protocol="stream"})"),
      2);
  EXPECT_EQ(sample(m, R"(strata_server_errors_total{code="18",reason="publisher_does_not_exist"})"),
            1);
  EXPECT_EQ(
      sample(m,
             R"(strata_server_publish_errors_total{code="18",reason="publisher_does_not_exist"})"),
      2);
  EXPECT_EQ(
      sample(m, R"(strata_server_publish_errors_total{code="6",reason="stream_not_available"})"),
      0);
  EXPECT_EQ(sample(m, R"(strata_server_errors_total{code="5",reason="stream_already_exists"})"), 0);
  // Records: 5 received, 3 confirmed, 3 delivered.
  EXPECT_EQ(sample(m, "strata_server_messages_in_total"), 5);
  EXPECT_EQ(sample(m, R"(rabbitmq_global_messages_received_total{protocol="stream"})"), 5);
  EXPECT_EQ(sample(m, R"(rabbitmq_global_messages_confirmed_total{protocol="stream"})"), 3);
  EXPECT_EQ(sample(m, "strata_server_messages_out_total"), 3);
  EXPECT_EQ(
      sample(
          m,
          R"(rabbitmq_global_messages_delivered_total{protocol="stream",queue_type="rabbit_stream_queue"})"),
      3);
  EXPECT_EQ(sample(m, R"(rabbitmq_global_publishers{protocol="stream"})"), 1);
  EXPECT_EQ(sample(m, R"(rabbitmq_global_consumers{protocol="stream"})"), 1);
  EXPECT_EQ(sample(m, "rabbitmq_connections"), 1);
  // The lag follows the delivery's own record of what it sent, which can
  // trail the client's read of the frame by a moment (a CI run read 3).
  const char* lag = R"(rabbitmq_detailed_stream_consumer_max_offset_lag{vhost="/",queue="m-1"})";
  EXPECT_TRUE(eventually(std::chrono::seconds(5), [&] {
    return sample(serve_http_get(server_, "/metrics"), lag) == 0;
  })) << serve_http_get(server_, "/metrics");
  EXPECT_EQ(sample(m, R"(strata_log_writer_up{stream="m-1"})"), 1);
  EXPECT_NE(m.find("strata_build_info{version=\""), std::string::npos) << m;
  EXPECT_EQ(serve_status(server_)["streams"]["m-1"]["writer"]["state"], "running");

  // The overview agrees with the metrics; a monitoring user reads it.
  const auto o = nlohmann::json::parse(
      http_get("http://mon:m0n@" + url_.substr(std::string("http://").size()) + "/api/overview",
               std::chrono::seconds(10)),
      nullptr, false);
  ASSERT_TRUE(o.is_object()) << o;
  EXPECT_EQ(o["strata_version"], kStrataVersion);
  EXPECT_EQ(o["object_totals"]["streams"], 1) << o;
  EXPECT_EQ(o["object_totals"]["connections"], 1) << o;
  EXPECT_EQ(o["object_totals"]["publishers"], 1) << o;
  EXPECT_EQ(o["message_stats"]["publish"], sample(m, "strata_server_messages_in_total")) << o;
  EXPECT_EQ(o["message_stats"]["confirm"], 3) << o;
  EXPECT_EQ(o["message_stats"]["deliver_get"], 3) << o;
  EXPECT_EQ(o["listeners"][0]["protocol"], "stream") << o;
  EXPECT_NE(o["object_store"]["location"].get<std::string>(), "") << o;
  // The uploader's puts, by operation, as strata_objstore_requests_total counts them.
  EXPECT_TRUE(o["object_store"]["requests"].is_object()) << o;
  EXPECT_TRUE(o["disk"]["free_bytes"].is_number()) << o;
}

// Super streams created, listed and deleted on the running node, named
// as rabbitmq-streams add_super_stream names them; a client sees the
// partitions at once; a monitoring user reads and changes nothing. The
// cluster view of a node alone.
TEST_F(ManagementStreamsTest, SuperStreamsAreAdministeredLiveAndTheClusterViewShowsTheNode) {
  auto made = as_admin(
      {"--json", "super-stream", "create", "orders", "--partitions", "3", "--max-age", "1D"});
  ASSERT_EQ(made.status, 0) << made.err;
  auto doc = nlohmann::json::parse(made.out);
  EXPECT_EQ(doc["created"], true);
  EXPECT_EQ(doc["super_stream"]["partitions"],
            nlohmann::json::array({"orders-0", "orders-1", "orders-2"}))
      << made.out;
  EXPECT_EQ(doc["super_stream"]["binding_keys"], nlohmann::json::array({"0", "1", "2"}));
  // The same again: there already; other partitions: refused (409).
  auto again = as_admin({"--json", "super-stream", "create", "orders", "--partitions", "3"});
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(nlohmann::json::parse(again.out)["created"], false);
  auto other = as_admin({"super-stream", "create", "orders", "--partitions", "2"});
  EXPECT_EQ(other.status, 1);
  EXPECT_NE(other.err.find("HTTP 409"), std::string::npos) << other.err;
  auto keyed = as_admin({"super-stream", "create", "inv", "--binding-keys", "eu,us"});
  ASSERT_EQ(keyed.status, 0) << keyed.err;
  auto none = as_admin({"super-stream", "create", "bare"});
  EXPECT_EQ(none.status, 1);
  // A body with an unknown field is refused, naming it.
  auto bad = server::api_request(
      url_, {"PUT", "/api/super-streams/odd", R"({"partitons": 2})", "guest", "guest"});
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("partitons"), std::string::npos) << bad->body;

  // Read by a monitoring user; each partition carries the arguments and
  // names its super stream.
  auto list = as_monitor({"--json", "list", "super-streams"});
  ASSERT_EQ(list.status, 0) << list.err;
  auto supers = nlohmann::json::parse(list.out)["super-streams"];
  ASSERT_EQ(supers.size(), 2u) << list.out;
  EXPECT_EQ(supers[0]["name"], "inv");
  EXPECT_EQ(supers[0]["partitions"], nlohmann::json::array({"inv-eu", "inv-us"}));
  auto all = streams();
  ASSERT_TRUE(all.count("orders-1"));
  EXPECT_EQ(all["orders-1"]["super_stream"], "orders");
  EXPECT_EQ(all["orders-1"]["arguments"]["x-max-age"], "86400s") << all["orders-1"].dump();
  EXPECT_TRUE(all["inv-us"].contains("super_stream"));
  auto refused = as_monitor({"super-stream", "delete", "orders"});
  EXPECT_EQ(refused.status, 1);
  EXPECT_NE(refused.err.find("HTTP 403"), std::string::npos) << refused.err;
  // A client sees the partitions.
  StreamClient c = open_client();
  ASSERT_TRUE(c.send(PartitionsRequest{c.corr(), "inv"}).ok());
  auto parts = c.expect<PartitionsResponse>();
  ASSERT_TRUE(parts.ok());
  EXPECT_EQ(parts->streams, (std::vector<std::string>{"inv-eu", "inv-us"}));

  // The cluster view of a node without a cluster section: itself.
  auto nodes = as_monitor({"--json", "list", "nodes"});
  ASSERT_EQ(nodes.status, 0) << nodes.err;
  auto n = nlohmann::json::parse(nodes.out)["nodes"];
  ASSERT_EQ(n.size(), 1u) << nodes.out;
  EXPECT_EQ(n[0]["this_node"], true);
  EXPECT_EQ(n[0]["streams_owned"], 5) << nodes.out;

  auto gone = as_admin({"super-stream", "delete", "inv"});
  ASSERT_EQ(gone.status, 0) << gone.err;
  EXPECT_FALSE(streams().count("inv-eu"));
  ASSERT_TRUE(c.send(PartitionsRequest{c.corr(), "inv"}).ok());
  EXPECT_EQ(c.expect<PartitionsResponse>()->code, ResponseCode::stream_does_not_exist);
  auto twice = as_admin({"super-stream", "delete", "inv"});
  EXPECT_EQ(twice.status, 1);
  EXPECT_NE(twice.err.find("HTTP 404"), std::string::npos) << twice.err;
}

// Consumer group lag: one series per stream and named group, the largest
// lags first, at most server.consumer_group_metrics of them.
TEST_F(ManagementStreamsTest, ConsumerGroupLagSeriesAreBounded) {
  restart_with_config("groups.json", R"({
      "server": {"consumer_group_metrics": 2},
      "users": [ {"name": "guest", "password": "guest", "tags": ["administrator"]} ]
    })",
                      {"--http", "127.0.0.1:0"});
  StreamClient c = open_client();
  create(c, "g-1");
  declare(c, 1, "g-1");
  publish_confirmed(c, 1, 0, {"a", "b", "c", "d", "e"});
  // Without credit each lags by what lies past where it starts.
  const std::vector<std::pair<std::string, int64_t>> groups = {{"ga", 0}, {"gb", 2}, {"gc", 4}};
  uint8_t id = 1;
  for (const auto& [g, from] : groups) {
    ASSERT_TRUE(c.send(SubscribeRequest{
                           c.corr(), id++, "g-1", {OffsetType::offset, from}, 0, {{"name", g}}})
                    .ok());
    ASSERT_EQ(c.expect<SubscribeResponse>()->code, ResponseCode::ok);
  }
  ASSERT_TRUE(c.send(SubscribeRequest{c.corr(), id++, "g-1", {OffsetType::first, 0}, 0, {}}).ok());
  ASSERT_EQ(c.expect<SubscribeResponse>()->code, ResponseCode::ok);
  std::string m;
  for (int i = 0; i < 100; ++i) {
    m = serve_http_get(server_, "/metrics");
    if (sample(m, R"(strata_consumer_group_offset_lag{stream="g-1",group="ga"})") == 5 &&
        sample(m, R"(strata_consumer_group_offset_lag{stream="g-1",group="gb"})") == 3) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(sample(m, R"(strata_consumer_group_offset_lag{stream="g-1",group="ga"})"), 5) << m;
  EXPECT_EQ(sample(m, R"(strata_consumer_group_offset_lag{stream="g-1",group="gb"})"), 3);
  // The smallest lag is the one left out, and counted.
  EXPECT_EQ(sample(m, R"(strata_consumer_group_offset_lag{stream="g-1",group="gc"})"), -1);
  EXPECT_EQ(sample(m, "strata_consumer_group_series_omitted"), 1);
  // The consumer list names each consumer's group (once every reader is
  // open: a consumer gets its lag with its reader).
  nlohmann::json consumers;
  for (int i = 0; i < 100; ++i) {
    consumers = nlohmann::json::parse(
        server::api_request(serve_http_url(server_),
                            {"GET", "/api/stream/consumers", "", "guest", "guest"})
            ->body);
    bool all_open = consumers.size() == 4;
    for (const auto& k : consumers) all_open = all_open && k.contains("offset_lag_bytes");
    if (all_open) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::set<std::string> named;
  for (const auto& k : consumers) {
    named.insert(k.value("consumer_group", ""));
    // Nothing delivered yet: the lag's bytes estimated from the log.
    EXPECT_GT(k.value("offset_lag_bytes", uint64_t(0)), 0u) << k.dump();
    EXPECT_EQ(k.value("offset_lag_bytes_estimated", false), true) << k.dump();
  }
  EXPECT_EQ(named, (std::set<std::string>{"", "ga", "gb", "gc"})) << consumers.dump();

  // A consumer given one chunk (of at least two): the bytes of the rest,
  // exactly (measured from where the first ends in the segment file).
  publish_confirmed(c, 1, 5, {"f", "g", "h"});
  StreamClient r = open_client();
  ASSERT_TRUE(r.send(SubscribeRequest{r.corr(), 1, "g-1", {OffsetType::first, 0}, 1, {}}).ok());
  ASSERT_EQ(r.expect<SubscribeResponse>()->code, ResponseCode::ok);
  ASSERT_TRUE(r.expect<DeliverFrame>().ok());
  nlohmann::json mine;
  for (int i = 0; i < 100; ++i) {
    const auto list = nlohmann::json::parse(
        server::api_request(serve_http_url(server_),
                            {"GET", "/api/stream/consumers", "", "guest", "guest"})
            ->body);
    // The only consumer given credit: its first chunk written.
    for (const auto& k : list) {
      if (k.value("messages_delivered", 0) > 0 && k.contains("offset_lag_bytes")) mine = k;
    }
    if (!mine.is_null()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_FALSE(mine.is_null());
  ASSERT_GT(mine["offset_lag"].get<uint64_t>(), 0u) << mine.dump();
  EXPECT_EQ(mine["offset_lag"].get<uint64_t>() + mine["offset"].get<uint64_t>(), 8u) << mine.dump();
  EXPECT_FALSE(mine.contains("offset_lag_bytes_estimated")) << mine.dump();
  // One-byte messages and their chunks' headers: more bytes than
  // messages, far less than a kilobyte.
  EXPECT_GT(mine["offset_lag_bytes"].get<uint64_t>(), mine["offset_lag"].get<uint64_t>())
      << mine.dump();
  EXPECT_LT(mine["offset_lag_bytes"].get<uint64_t>(), 1024u) << mine.dump();
}

// The hour the console charts, sampled by the node: a stream's messages
// and lags at each sample, the totals, read by a monitoring user.
TEST_F(ManagementStreamsTest, TheNodeSamplesTheLastHourOfEachStream) {
  restart_with_config("history.json", R"({
      "server": {"history_interval_ms": 100},
      "users": [ {"name": "guest", "password": "guest", "tags": ["administrator"]},
                 {"name": "mon", "password": "m0n", "tags": ["monitoring"]} ]
    })",
                      {"--http", "127.0.0.1:0"});
  StreamClient c = open_client();
  create(c, "h-1");
  declare(c, 1, "h-1");
  publish_confirmed(c, 1, 0, {"a", "b", "c"});
  const std::string url = serve_http_url(server_);
  nlohmann::json doc;
  for (int i = 0; i < 100; ++i) {
    auto r = server::api_request(url, {"GET", "/api/history?stream=h-1", "", "mon", "m0n"});
    ASSERT_TRUE(r.ok());
    if (r->status == 200) {
      doc = nlohmann::json::parse(r->body);
      size_t with_three = 0;
      for (const auto& x : doc["samples"]) with_three += x["messages"] == 3;
      if (with_three >= 2) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(doc.is_object()) << "no history of h-1";
  EXPECT_EQ(doc["stream"], "h-1");
  EXPECT_EQ(doc["interval_ms"], 100);
  const auto& samples = doc["samples"];
  ASSERT_GE(samples.size(), 2u) << doc.dump();
  // Oldest first, each with the figures the console charts.
  EXPECT_LT(samples[0]["t"].get<int64_t>(), samples[samples.size() - 1]["t"].get<int64_t>());
  EXPECT_EQ(samples[samples.size() - 1]["messages"], 3) << doc.dump();
  for (const char* k : {"upload_lag_bytes", "upload_lag_offsets", "consumer_max_lag"}) {
    EXPECT_TRUE(samples[0].contains(k)) << k;
  }
  // The totals over every stream served here.
  auto all = server::api_request(url, {"GET", "/api/history", "", "mon", "m0n"});
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->status, 200) << all->body;
  const auto totals = nlohmann::json::parse(all->body)["samples"];
  ASSERT_FALSE(totals.empty());
  EXPECT_EQ(totals[totals.size() - 1]["messages"], 3) << all->body;
  auto none = server::api_request(url, {"GET", "/api/history?stream=nope", "", "mon", "m0n"});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->status, 404) << none->body;
}

TEST_F(ManagementStreamsTest, AnOperatorClosesAConnection) {
  auto victim = std::make_unique<StreamClient>(open_client());
  StreamClient bystander = open_client();
  auto conns = as_monitor({"--json", "list", "connections"});
  ASSERT_EQ(conns.status, 0) << conns.err;
  auto list = nlohmann::json::parse(conns.out)["connections"];
  ASSERT_EQ(list.size(), 2u) << conns.out;
  const uint64_t id = list[0]["id"];
  // Each has carried its handshake both ways (PeerProperties, SASL, Tune,
  // Open: well over 100 bytes each way).
  for (const auto& c : list) {
    EXPECT_GT(c["recv_oct"].get<uint64_t>(), 100u) << c.dump();
    EXPECT_GT(c["send_oct"].get<uint64_t>(), 100u) << c.dump();
  }
  // A monitoring user may not; an administrator may.
  auto refused = as_monitor({"connection", "close", std::to_string(id)});
  EXPECT_EQ(refused.status, 1);
  EXPECT_NE(refused.err.find("HTTP 403"), std::string::npos) << refused.err;
  auto closed = as_admin({"connection", "close", std::to_string(id)});
  ASSERT_EQ(closed.status, 0) << closed.err;
  EXPECT_TRUE(victim->closed_by_server());
  // The server's side ends once the client's does (it reads until then).
  victim.reset();
  // The other connection goes on.
  create(bystander, "still-here");
  auto unknown = as_admin({"connection", "close", "999999"});
  EXPECT_EQ(unknown.status, 1);
  EXPECT_NE(unknown.err.find("HTTP 404"), std::string::npos) << unknown.err;
  // It is gone from the list; the other one is not.
  nlohmann::json after;
  for (int i = 0; i < 100; ++i) {
    after = nlohmann::json::parse(as_monitor({"--json", "list", "connections"}).out);
    if (after["connections"].size() == 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(after["connections"].size(), 1u) << after.dump();
  EXPECT_NE(after["connections"][0]["id"], id);
}

// A consumer group's offset read and reset through the API (`strata offset
// get|set`): what StoreOffset wrote is shown, a reset is what QueryOffset
// answers next; "first" and "next" resolve on the serving node.
TEST_F(ManagementStreamsTest, AConsumerGroupsOffsetIsReadAndReset) {
  StreamClient c = open_client();
  create(c, "orders");
  declare(c, 1, "orders");
  publish_confirmed(c, 1, 0, {"a", "b", "c", "d", "e"});
  ASSERT_TRUE(c.send(StoreOffsetRequest{"billing", "orders", 2}).ok());
  auto query = [&] {
    EXPECT_TRUE(c.send(QueryOffsetRequest{c.corr(), "billing", "orders"}).ok());
    auto r = c.expect<QueryOffsetResponse>();
    EXPECT_TRUE(r.ok() && r->code == ResponseCode::ok);
    return r.ok() ? r->offset : ~0ull;
  };
  ASSERT_EQ(query(), 2u);  // stored (StoreOffset has no answer)
  auto got =
      as_monitor({"--json", "offset", "get", "--stream", "orders", "--reference", "billing"});
  ASSERT_EQ(got.status, 0) << got.err;
  EXPECT_EQ(nlohmann::json::parse(got.out)["offset"], 2) << got.out;
  auto none = as_monitor({"--json", "offset", "get", "--stream", "orders", "--reference", "x"});
  ASSERT_EQ(none.status, 0) << none.err;
  EXPECT_TRUE(nlohmann::json::parse(none.out)["offset"].is_null()) << none.out;

  auto set =
      as_admin({"offset", "set", "--stream", "orders", "--reference", "billing", "--offset", "4"});
  ASSERT_EQ(set.status, 0) << set.err;
  EXPECT_EQ(query(), 4u);
  ASSERT_EQ(as_admin({"offset", "set", "--stream", "orders", "--reference", "billing", "--offset",
                      "next"})
                .status,
            0);
  EXPECT_EQ(query(), 5u);
  ASSERT_EQ(as_admin({"offset", "set", "--stream", "orders", "--reference", "billing", "--offset",
                      "first"})
                .status,
            0);
  EXPECT_EQ(query(), 0u);

  // Refused: a monitoring user, an unknown stream, a word that is no offset.
  auto monitor = as_monitor(
      {"offset", "set", "--stream", "orders", "--reference", "billing", "--offset", "1"});
  EXPECT_EQ(monitor.status, 1);
  EXPECT_NE(monitor.err.find("HTTP 403"), std::string::npos) << monitor.err;
  auto unknown =
      as_admin({"offset", "set", "--stream", "nope", "--reference", "billing", "--offset", "1"});
  EXPECT_EQ(unknown.status, 1);
  EXPECT_NE(unknown.err.find("HTTP 404"), std::string::npos) << unknown.err;
  auto word = as_admin(
      {"offset", "set", "--stream", "orders", "--reference", "billing", "--offset", "last"});
  EXPECT_EQ(word.status, 1);
  EXPECT_NE(word.err.find("HTTP 400"), std::string::npos) << word.err;
  EXPECT_EQ(query(), 0u);
}

// A stream's retention changed while it runs (`strata stream alter`, PATCH
// /api/streams/NAME), as a RabbitMQ policy changes max-age and
// max-length-bytes: applied at once, shown in the stream's arguments, and
// nothing else about the stream may change so.
TEST_F(ManagementStreamsTest, AStreamsRetentionIsAlteredWhileItRuns) {
  auto made = as_admin({"stream", "create", "kept", "--stream-max-segment-size-bytes", "8192",
                        "--x-strata-tiering", "false"});
  ASSERT_EQ(made.status, 0) << made.err;
  StreamClient c = open_client();
  declare(c, 1, "kept");
  const std::string kib(1024, 'x');
  for (int batch = 0; batch < 10; ++batch) {
    publish_confirmed(c, 1, uint64_t(batch) * 10, std::vector<std::string>(10, kib));
  }
  auto before = streams()["kept"];
  ASSERT_EQ(before["first_offset"], 0) << before.dump();
  ASSERT_EQ(before["next_offset"], 100) << before.dump();
  // A consumer from the start, one chunk at a time: the shrink happens
  // under it.
  StreamClient reader = open_client();
  ASSERT_TRUE(
      reader.send(SubscribeRequest{reader.corr(), 7, "kept", {OffsetType::first, 0}, 1, {}}).ok());
  ASSERT_EQ(reader.expect<SubscribeResponse>()->code, ResponseCode::ok);
  auto first_chunk = reader.expect<DeliverFrame>();
  ASSERT_TRUE(first_chunk.ok()) << first_chunk.error().message;
  ASSERT_EQ(decode_osiris_header(first_chunk->chunk)->chunk_id, 0u);

  auto altered = as_admin({"--json", "stream", "alter", "kept", "--max-length-bytes", "20000"});
  ASSERT_EQ(altered.status, 0) << altered.err;
  EXPECT_EQ(nlohmann::json::parse(altered.out)["arguments"]["x-max-length-bytes"], 20000)
      << altered.out;
  auto after = streams()["kept"];
  EXPECT_EQ(after["arguments"]["x-max-length-bytes"], 20000) << after.dump();
  EXPECT_EQ(after["arguments"]["x-stream-max-segment-size-bytes"], 8192) << after.dump();
  EXPECT_GT(after["first_offset"].get<uint64_t>(), 50u) << after.dump();
  EXPECT_LE(after["local"]["bytes"].get<uint64_t>(), 20000u + 2 * 8192u) << after.dump();
  // The consumer goes on, in offset order, to the stream's end: past what
  // the shrink removed (skipped or still read from its open segment), never
  // stuck and never closed.
  uint64_t last_chunk = 0, end = 0;
  for (int i = 0; i < 200 && end < 100; ++i) {
    ASSERT_TRUE(reader.send(CreditRequest{7, 1}).ok());
    auto d = reader.expect<DeliverFrame>();
    ASSERT_TRUE(d.ok()) << d.error().message << " after offset " << end << "; the server's log:\n"
                        << server_.process().stdout_text();
    auto h = decode_osiris_header(d->chunk);
    ASSERT_TRUE(h.ok());
    EXPECT_GT(h->chunk_id, last_chunk);
    last_chunk = h->chunk_id;
    end = h->chunk_id + h->num_records;
  }
  EXPECT_EQ(end, 100u) << server_.process().stdout_text();

  // Refused, naming why: a setting fixed at creation, a bad value, a
  // monitoring user, an unknown stream. None changes the stream.
  auto fixed = server::api_request(
      url_, {"PATCH", "/api/streams/kept", R"({"arguments": {"x-strata-confirm": "remote"}})",
             "guest", "guest"});
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(fixed->status, 400);
  EXPECT_NE(fixed->body.find("x-strata-confirm"), std::string::npos) << fixed->body;
  auto bad = as_admin({"stream", "alter", "kept", "--max-age", "soon"});
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("max-age"), std::string::npos) << bad.err;
  auto monitor = as_monitor({"stream", "alter", "kept", "--max-age", "1D"});
  EXPECT_EQ(monitor.status, 1);
  EXPECT_NE(monitor.err.find("HTTP 403"), std::string::npos) << monitor.err;
  auto unknown = as_admin({"stream", "alter", "nope", "--max-age", "1D"});
  EXPECT_EQ(unknown.status, 1);
  EXPECT_NE(unknown.err.find("HTTP 404"), std::string::npos) << unknown.err;
  EXPECT_EQ(streams()["kept"]["arguments"], after["arguments"]);

  // "none" removes the limit: nothing more is dropped.
  auto cleared =
      as_admin({"stream", "alter", "kept", "--max-length-bytes", "none", "--max-age", "7D"});
  ASSERT_EQ(cleared.status, 0) << cleared.err;
  const uint64_t first = streams()["kept"]["first_offset"];
  for (int batch = 10; batch < 20; ++batch) {
    publish_confirmed(c, 1, uint64_t(batch) * 10, std::vector<std::string>(10, kib));
  }
  auto last = streams()["kept"];
  EXPECT_EQ(last["first_offset"], first) << last.dump();
  EXPECT_FALSE(last["arguments"].contains("x-max-length-bytes")) << last.dump();
  EXPECT_EQ(last["arguments"]["x-max-age"], "604800s") << last.dump();
}

// `strata serve` logs at info by default, so a refused login shows without
// --log-level; logging.format "json" makes every log line one JSON object
// with a UTC timestamp.
TEST_F(ServeTest, RefusedLoginsAreLoggedByDefaultAsJsonLines) {
  restart_with_config("logging.json", R"({"logging": {"format": "json"}})");
  auto c = StreamClient::connect(server_.port());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_FALSE(c->handshake("guest", "not-the-password").ok());
  nlohmann::json line;
  for (int i = 0; i < 500 && line.is_null(); ++i) {
    std::istringstream out(server_.process().stdout_text());
    for (std::string l; std::getline(out, l);) {
      if (l.find("authentication of 'guest' failed") == std::string::npos) continue;
      line = nlohmann::json::parse(l, nullptr, false);
      break;
    }
    if (line.is_null()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(line.is_object()) << server_.process().stdout_text();
  EXPECT_EQ(line["level"], "info");
  EXPECT_TRUE(std::regex_match(line["ts"].get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")))
      << line.dump();
  EXPECT_NE(line["msg"].get<std::string>().find("connection"), std::string::npos) << line.dump();
}

}  // namespace
}  // namespace strata::test
