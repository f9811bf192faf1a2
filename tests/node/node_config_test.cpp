// Node configuration: defaults, and every bad setting refused with an error
// that names it.
#include "node/node_config.h"

#include <gtest/gtest.h>

#include "support/assertions.h"

namespace strata::node {
namespace {

using json = nlohmann::json;

objstore::EnvLookup no_env() {
  return [](const std::string&) { return std::optional<std::string>(); };
}

TEST(NodeConfig, DefaultsAreTheEmbeddedOnes) {
  auto c = load_node_config(json(), "/tmp/x", no_env());
  ASSERT_OK(c);
  EXPECT_EQ(c->objstore.backend, objstore::ObjectStoreConfig::Backend::fs);
  EXPECT_EQ(c->objstore.fs.root, "/tmp/x/objects");
  EXPECT_EQ(c->tiering.fragment_target_bytes, 64ull << 20);
  EXPECT_EQ(c->tiering.fragment_max_age_ms, 10'000);
  EXPECT_EQ(c->tiering.persist_interval_ms, 2000);
  EXPECT_FALSE(c->governor.rate_bytes_per_sec.has_value());
  EXPECT_TRUE(c->http_listen.empty());
}

TEST(NodeConfig, ReadsEverySection) {
  json doc = {
      {"data_dir", "/d"},
      {"catalog", {{"backend", "embedded"}, {"capacity", 100}}},
      {"log", {{"fsync", "never"}, {"segment_bytes", 1 << 20}, {"retention", {{"max_bytes", 5}}}}},
      {"tiering",
       {{"fragment_target_bytes", 4096},
        {"fragment_max_age_ms", 0},
        {"retention", {{"max_age_ms", 60000}}}}},
      {"governor", {{"max_bytes_per_sec", 1000000}, {"max_concurrent", 3}}},
      {"threads", {{"io", 1}, {"blocking", 2}}},
      {"http", {{"listen", "127.0.0.1:0"}}}};
  auto c = load_node_config(doc, "", no_env());
  ASSERT_OK(c);
  EXPECT_EQ(c->data_dir, "/d");
  EXPECT_EQ(c->catalog_capacity, 100u);
  EXPECT_EQ(c->fsync, log::FsyncPolicy::never);
  EXPECT_EQ(*c->local_retention.max_bytes, 5u);
  EXPECT_EQ(c->tiering.fragment_max_age_ms, 0);
  EXPECT_EQ(*c->tiering.retention.max_age_ms, 60000);
  EXPECT_EQ(*c->governor.rate_bytes_per_sec, 1000000u);
  EXPECT_EQ(c->governor.max_concurrent, 3u);
  EXPECT_EQ(c->http_listen, "127.0.0.1:0");
}

TEST(NodeConfig, ReadsTheEtcdCatalogBackend) {
  json doc = {{"catalog",
               {{"backend", "etcd"},
                {"endpoints", {"http://127.0.0.1:2379", "http://127.0.0.1:2381"}},
                {"namespace", "prod/strata"},
                {"request_timeout_ms", 2000}}}};
  auto c = load_node_config(doc, "/d", no_env());
  ASSERT_OK(c);
  EXPECT_EQ(c->catalog_backend, "etcd");
  EXPECT_EQ(c->catalog_etcd.endpoints.size(), 2u);
  EXPECT_EQ(c->catalog_etcd.ns, "prod/strata");
  EXPECT_EQ(c->catalog_etcd.request_timeout_ms, 2000);
  EXPECT_EQ(c->catalog_etcd.attempt_timeout_ms, 1500);
  EXPECT_EQ(describe_node_config(*c)["catalog"]["endpoints"][1], "http://127.0.0.1:2381");
}

TEST(NodeConfig, ConfirmModeDefaultsToLocalAndReadsRemote) {
  auto d = load_node_config(json(), "/tmp/x", no_env());
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->tiering.confirm, ConfirmMode::local);
  EXPECT_EQ(d->tiering.remote_confirm_cut_ms, 100);
  EXPECT_EQ(d->tiering.remote_confirm_timeout_ms, 30'000);
  json doc = {
      {"tiering",
       {{"confirm", "remote"}, {"remote_confirm_cut_ms", 0}, {"remote_confirm_timeout_ms", 5000}}}};
  auto r = load_node_config(doc, "/tmp/x", no_env());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->tiering.confirm, ConfirmMode::remote);
  EXPECT_EQ(r->tiering.remote_confirm_cut_ms, 0);
  EXPECT_EQ(r->tiering.remote_confirm_timeout_ms, 5000);
  EXPECT_EQ(describe_node_config(*r)["tiering"]["confirm"], "remote");
}

TEST(NodeConfig, BadSettingsAreNamed) {
  struct Case {
    json doc;
    std::string names;
  };
  std::vector<Case> cases = {
      {{{"tiering", {{"fragment_target_bytes", -5}}}}, "tiering.fragment_target_bytes"},
      {{{"tiering", {{"fragment_target_bytes", 0}}}}, "tiering.fragment_target_bytes"},
      {{{"tiering", {{"persist_interval_ms", "soon"}}}}, "tiering.persist_interval_ms"},
      {{{"tiering", {{"retention", {{"max_bytes", -1}}}}}}, "tiering.retention.max_bytes"},
      {{{"tiering", {{"key_prefix", "a//b"}}}}, "tiering.key_prefix"},
      {{{"tiering", {{"confirm", "sometimes"}}}}, "tiering.confirm"},
      {{{"tiering", {{"enabled", false}, {"confirm", "remote"}}}}, "tiering.confirm"},
      {{{"tiering", {{"remote_confirm_timeout_ms", 0}}}}, "tiering.remote_confirm_timeout_ms"},
      {{{"tiering", {{"remote_confirm_cut_ms", -1}}}}, "tiering.remote_confirm_cut_ms"},
      {{{"tiering", {{"fragmnet_target_bytes", 5}}}}, "tiering.fragmnet_target_bytes"},
      {{{"log", {{"fsync", "sometimes"}}}}, "log.fsync"},
      {{{"log", {{"segment_bytes", 10}}}}, "log.segment_bytes"},
      {{{"governor", {{"max_concurrent", 0}}}}, "governor.max_concurrent"},
      {{{"catalog", {{"backend", "zookeeper"}}}}, "catalog.backend"},
      {{{"catalog", {{"backend", "etcd"}}}}, "catalog.endpoints"},
      {{{"catalog", {{"backend", "etcd"}, {"endpoints", json::array()}}}}, "catalog.endpoints"},
      {{{"catalog", {{"backend", "etcd"}, {"endpoints", {"127.0.0.1:2379"}}}}},
       "catalog.endpoints"},
      {{{"catalog", {{"backend", "etcd"}, {"endpoints", {"http://h:1"}}, {"namespace", "/x"}}}},
       "catalog.namespace"},
      {{{"catalog", {{"backend", "etcd"}, {"endpoints", {"http://h:1"}}, {"capacity", 5}}}},
       "catalog.capacity"},
      {{{"catalog",
         {{"backend", "etcd"}, {"endpoints", {"http://h:1"}}, {"request_timeout_ms", 0}}}},
       "catalog.request_timeout_ms"},
      {{{"threads", {{"io", 1000}}}}, "threads.io"},
      {{{"tiering", 7}}, "tiering"},
      {{{"bogus", 1}}, "bogus"},
      {{{"objstore", {{"backend", "s3"}, {"s3", {{"max_connections", -2}}}}}},
       "objstore.s3.max_connections"},
  };
  for (const auto& c : cases) {
    auto r = load_node_config(c.doc, "/tmp/x", no_env());
    ASSERT_FALSE(r.ok()) << c.doc.dump();
    EXPECT_EQ(r.error().code, Errc::invalid_argument) << c.doc.dump();
    EXPECT_NE(r.error().message.find(c.names), std::string::npos)
        << c.doc.dump() << " -> " << r.error().message;
  }
  auto r = load_node_config(json(), "", no_env());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("data_dir"), std::string::npos);
}

}  // namespace
}  // namespace strata::node
