#include "server/serve_config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "support/temp_dir.h"

namespace strata::server {
namespace {

using json = nlohmann::json;

objstore::EnvLookup no_env() {
  return [](const std::string&) { return std::optional<std::string>(); };
}

TEST(ServeConfig, DefaultsAndFlags) {
  ServeFlags f;
  f.data_dir = "/tmp/x";
  auto c = load_serve_config(json(), f, no_env());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->server.listen, "127.0.0.1:5552");
  ASSERT_EQ(c->server.users.access->users().size(), 1u);
  EXPECT_EQ(c->server.users.access->users()[0].name, "guest");
  EXPECT_TRUE(c->server.users.access->has_tag("guest", "administrator"));
  EXPECT_TRUE(c->server.users.access->check("guest", "/", auth::Op::configure, "any"));
  EXPECT_EQ(c->server.users.peer.user, "guest");
  EXPECT_EQ(c->node.data_dir, "/tmp/x");
  EXPECT_EQ(c->server.coalesce_bytes, 0u);
  EXPECT_EQ(c->server.append_linger_us, 2000u);
  EXPECT_EQ(c->server.close_linger_ms, 2000u);
  EXPECT_EQ(c->logging.level, "info");
  EXPECT_EQ(c->logging.format, "text");
  auto logged =
      load_serve_config(json{{"logging", {{"level", "debug"}, {"format", "json"}}}}, f, no_env());
  ASSERT_TRUE(logged.ok()) << logged.error().message;
  EXPECT_EQ(logged->logging.level, "debug");
  EXPECT_EQ(logged->logging.format, "json");

  f.listen = "127.0.0.1:0";
  f.advertised_host = "example.org";
  f.advertised_port = 15552;
  c = load_serve_config(json{{"server",
                              {{"listen", "0.0.0.0:1"},
                               {"heartbeat_s", 5},
                               {"coalesce_bytes", 0},
                               {"close_linger_ms", 0}}},
                             {"users", {{{"name", "app"}, {"password", "pw"}}}}},
                        f, no_env());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->server.listen, "127.0.0.1:0");
  EXPECT_EQ(c->server.advertised_host, "example.org");
  EXPECT_EQ(c->server.advertised_port, 15552u);
  EXPECT_EQ(c->server.heartbeat_s, 5u);
  EXPECT_EQ(c->server.coalesce_bytes, 0u);
  EXPECT_EQ(c->server.close_linger_ms, 0u);
  ASSERT_EQ(c->server.users.access->users().size(), 1u);
  EXPECT_EQ(c->server.users.access->users()[0].name, "app");
  // Without permissions, every user everything in "/", as before.
  EXPECT_TRUE(c->server.users.access->check("app", "/", auth::Op::write, "s"));
  EXPECT_EQ(c->server.users.access->authenticate_plain("app", "pw", false), auth::AuthOutcome::ok);
  EXPECT_EQ(c->server.users.peer.user, "app");
  EXPECT_EQ(c->server.users.peer.password, "pw");
}

TEST(ServeConfig, ErrorsNameTheSetting) {
  ServeFlags f;
  f.data_dir = "/tmp/x";
  struct Case {
    json doc;
    std::string needle;
  };
  auto tls = [](json section) { return json{{"tls", std::move(section)}}; };
  std::vector<Case> cases = {
      {json{{"server", {{"listen", "nocolon"}}}}, "server.listen"},
      {json{{"server", {{"frame_max", 10}}}}, "server.frame_max"},
      {json{{"server", {{"typo", 1}}}}, "server.typo"},
      {json{{"server", {{"coalesce_bytes", 128 << 20}}}}, "server.coalesce_bytes"},
      {json{{"server", {{"close_linger_ms", 60'001}}}}, "server.close_linger_ms"},
      {json{{"users", json::array()}}, "users"},
      {json{{"users", {{{"name", "a"}}}}}, "users[0]"},
      {json{{"users", {{{"name", "a"}, {"password", "x"}, {"pasword_hash", "y"}}}}},
       "users[0].pasword_hash"},
      {json{{"users", {{{"name", "a"}, {"password", "x"}, {"password_hash", "y"}}}}}, "users[0]"},
      {json{{"users", {{{"name", "a"}, {"password_hash", "!!"}}}}}, "password_hash"},
      {json{{"users", {{{"name", "a"}, {"password_file", "/nonexistent/pw"}}}}},
       "users[0].password_file"},
      {json{{"permissions",
             {{{"user", "nobody"},
               {"vhost", "/"},
               {"configure", ""},
               {"write", ""},
               {"read", ""}}}}},
       "nobody"},
      {json{{"permissions",
             {{{"user", "guest"},
               {"vhost", "/"},
               {"configure", "("},
               {"write", ""},
               {"read", ""}}}}},
       "configure"},
      {json{{"definitions_file", "/nonexistent/defs.json"}, {"users", json::array()}},
       "definitions_file"},
      {json{{"definitions_file", "/nonexistent/defs.json"}}, "/nonexistent/defs.json"},
      {json{{"tiering", {{"bogus", 1}}}}, "bogus"},
      {json{{"server", {{"auth_mechanisms", {"PLAIN", "CRAM-MD5"}}}}}, "server.auth_mechanisms"},
      {json{{"server", {{"auth_mechanisms", {"PLAIN", "PLAIN"}}}}}, "server.auth_mechanisms"},
      {json{{"server", {{"auth_mechanisms", json::array()}}}}, "server.auth_mechanisms"},
      {json{{"server", {{"auth_mechanisms", {"ANONYMOUS"}}}}}, "server.anonymous_user"},
      {tls({{"listen", "127.0.0.1:0"}}), "tls.cert_file"},
      {tls({{"listen", "127.0.0.1:0"}, {"cert_file", "c"}}), "tls.key_file"},
      {tls({{"listen", "nocolon"}, {"cert_file", "c"}, {"key_file", "k"}}), "tls.listen"},
      {tls({{"listen", "127.0.0.1:0"},
            {"cert_file", "c"},
            {"key_file", "k"},
            {"verify_peer", true}}),
       "tls.ca_file"},
      {tls({{"versions", {"tlsv1.1"}}}), "tls.versions"},
      {tls({{"cert_login_from", "email"}}), "tls.cert_login_from"},
      {tls({{"only", true}}), "tls.only"},
      {tls({{"listen", "127.0.0.1:0"},
            {"cert_file", "c"},
            {"key_file", "k"},
            {"fail_if_no_peer_cert", true}}),
       "tls.fail_if_no_peer_cert"},
      {tls({{"sslv3", true}}), "tls.sslv3"},
      {json{{"logging", {{"level", "verbose"}}}}, "logging.level"},
      {json{{"logging", {{"format", "xml"}}}}, "logging.format"},
      {json{{"logging", {{"colour", true}}}}, "logging.colour"},
      {json{{"catalog",
             {{"backend", "etcd"},
              {"endpoints", {"https://127.0.0.1:2379"}},
              {"ca_file", "/nonexistent/ca.pem"}}}},
       "catalog.ca_file"},
      {json{{"catalog",
             {{"backend", "etcd"},
              {"endpoints", {"https://127.0.0.1:2379"}},
              {"cert_file", "/etc/passwd"}}}},
       "catalog.key_file"},
  };
  for (const auto& c : cases) {
    auto r = load_serve_config(c.doc, f, no_env());
    ASSERT_FALSE(r.ok()) << c.doc.dump();
    EXPECT_NE(r.error().message.find(c.needle), std::string::npos) << r.error().message;
  }
  ServeFlags bad = f;
  bad.listen = "127.0.0.1:99999";
  auto r = load_serve_config(json(), bad, no_env());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("--listen"), std::string::npos) << r.error().message;
}

json etcd_catalog() {
  return {{"backend", "etcd"}, {"endpoints", {"http://127.0.0.1:2379"}}, {"namespace", "ns1"}};
}

// The "Several nodes" example of README.md.
TEST(ServeConfig, ReadmeClusterExample) {
  auto doc = json::parse(R"({
      "data_dir": "/var/lib/strata",
      "objstore": { "backend": "s3", "s3": { "endpoint": "http://s3.example:9000", "bucket": "strata" } },
      "catalog":  { "backend": "etcd", "endpoints": ["http://10.0.0.1:2379", "http://10.0.0.2:2379", "http://10.0.0.3:2379"] },
      "server":   { "listen": "0.0.0.0:5552", "advertised_host": "10.0.0.11" },
      "cluster":  { "enabled": true, "node_id": "n1", "lease_ttl_ms": 5000 }
    })");
  auto env = [](const std::string& k) -> std::optional<std::string> {
    if (k == "AWS_ACCESS_KEY_ID") return "id";
    if (k == "AWS_SECRET_ACCESS_KEY") return "secret";
    return std::nullopt;
  };
  auto c = load_serve_config(doc, ServeFlags{}, env);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_TRUE(c->cluster.enabled);
  EXPECT_EQ(c->node.catalog_etcd.endpoints.size(), 3u);
  // A cluster confirms remote unless told otherwise.
  EXPECT_EQ(c->node.tiering.confirm, node::ConfirmMode::remote);
  EXPECT_FALSE(c->cluster.local_confirms_asked);
}

TEST(ServeConfig, Cluster) {
  ServeFlags f;
  f.data_dir = "/tmp/x";
  auto c = load_serve_config(json(), f, no_env());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_FALSE(c->cluster.enabled);
  EXPECT_TRUE(c->node.open_streams_at_start);
  // A single node confirms local by default.
  EXPECT_EQ(c->node.tiering.confirm, node::ConfirmMode::local);
  EXPECT_FALSE(c->cluster.local_confirms_asked);

  c = load_serve_config(json{{"catalog", etcd_catalog()},
                             {"cluster",
                              {{"enabled", true},
                               {"node_id", "n-1"},
                               {"lease_ttl_ms", 2000},
                               {"acquire_grace_ms", 500}}}},
                        f, no_env());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_TRUE(c->cluster.enabled);
  EXPECT_EQ(c->cluster.node_id, "n-1");
  EXPECT_EQ(c->cluster.lease_ttl_ms, 2000);
  EXPECT_EQ(c->cluster.acquire_grace_ms, 500);
  // A cluster node opens streams as it comes to own them.
  EXPECT_FALSE(c->node.open_streams_at_start);
  auto oc = ownership_config(c->cluster, c->node, "h:1");
  EXPECT_EQ(oc.ns, "ns1");
  EXPECT_EQ(oc.advertise, "h:1");
  EXPECT_EQ(oc.timing.lease_ttl_ms, 2000);
  EXPECT_EQ(oc.timing.rebalance_after_ms, 0) << "the core's default: twice the TTL";

  // Hand-over: after a set time, or never.
  c = load_serve_config(
      json{{"catalog", etcd_catalog()},
           {"cluster", {{"enabled", true}, {"node_id", "a"}, {"rebalance_after_ms", 30000}}}},
      f, no_env());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(ownership_config(c->cluster, c->node, "h:1").timing.rebalance_after_ms, 30000);
  c = load_serve_config(
      json{{"catalog", etcd_catalog()},
           {"cluster", {{"enabled", true}, {"node_id", "a"}, {"rebalance", false}}}},
      f, no_env());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_LT(ownership_config(c->cluster, c->node, "h:1").timing.rebalance_after_ms, 0);
  EXPECT_FALSE(c->cluster.replica_copies) << "off unless asked for";
  c = load_serve_config(
      json{{"catalog", etcd_catalog()},
           {"cluster", {{"enabled", true}, {"node_id", "a"}, {"replica_copies", true}}}},
      f, no_env());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_TRUE(c->cluster.replica_copies);
  c = load_serve_config(
      json{{"catalog", etcd_catalog()},
           {"cluster", {{"enabled", true}, {"node_id", "a"}, {"replica_copies", "yes"}}}},
      f, no_env());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("cluster.replica_copies"), std::string::npos)
      << c.error().message;

  // A cluster defaults to remote confirms; local is taken when asked for,
  // and marked so that serve warns at start.
  const json cluster_a = {{"enabled", true}, {"node_id", "a"}};
  c = load_serve_config(json{{"catalog", etcd_catalog()}, {"cluster", cluster_a}}, f, no_env());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->node.tiering.confirm, node::ConfirmMode::remote);
  EXPECT_FALSE(c->cluster.local_confirms_asked);
  c = load_serve_config(
      json{
          {"catalog", etcd_catalog()}, {"cluster", cluster_a}, {"tiering", {{"confirm", "local"}}}},
      f, no_env());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->node.tiering.confirm, node::ConfirmMode::local);
  EXPECT_TRUE(c->cluster.local_confirms_asked);

  struct Case {
    json doc;
    std::string needle;
  };
  std::vector<Case> cases = {
      {json{{"cluster", {{"enabled", true}, {"node_id", "a"}}}}, "etcd catalog"},
      {json{{"catalog", etcd_catalog()}, {"cluster", {{"enabled", true}}}}, "cluster.node_id"},
      {json{{"catalog", etcd_catalog()}, {"cluster", {{"enabled", true}, {"node_id", "a b"}}}},
       "cluster.node_id"},
      {json{{"catalog", etcd_catalog()},
            {"cluster", {{"enabled", true}, {"node_id", "a"}, {"lease_ttl_ms", 1500}}}},
       "cluster.lease_ttl_ms"},
      {json{{"cluster", {{"lease_ttl_ms", 10}}}}, "cluster.lease_ttl_ms"},
      {json{{"cluster", {{"enabled", "yes"}}}}, "cluster.enabled"},
      {json{{"cluster", {{"rebalance", 1}}}}, "cluster.rebalance"},
      {json{{"catalog", etcd_catalog()},
            {"tiering", {{"enabled", false}}},
            {"cluster", {{"enabled", true}, {"node_id", "a"}}}},
       "needs tiering"},
      {json{{"cluster", {{"rebalance_after_ms", -5}}}}, "cluster.rebalance_after_ms"},
      {json{{"cluster", {{"typo", 1}}}}, "cluster.typo"},
      {json{{"cluster", 3}}, "cluster"},
  };
  for (const auto& k : cases) {
    auto r = load_serve_config(k.doc, f, no_env());
    ASSERT_FALSE(r.ok()) << k.doc.dump();
    EXPECT_NE(r.error().message.find(k.needle), std::string::npos) << r.error().message;
  }
}

// cluster.peer_user: the nodes log in to each other as a configured user,
// not as whichever user the list gives a cleartext password first.
TEST(ServeConfig, ClusterPeerLogin) {
  test::TempDir dir;
  const std::string pw = dir.sub("peer.pw");
  std::ofstream(pw) << "r3pl\n";
  ::chmod(pw.c_str(), 0600);
  const std::string open_pw = dir.sub("open.pw");
  std::ofstream(open_pw) << "r3pl\n";
  ::chmod(open_pw.c_str(), 0644);
  ServeFlags f;
  f.data_dir = "/tmp/x";
  const json users =
      json::array({{{"name", "guest"}, {"password", "guest"}, {"tags", {"administrator"}}},
                   {{"name", "replicator"},
                    {"password_hash", auth::hash_password("r3pl", auth::HashAlgorithm::sha256,
                                                          auth::Salt{1, 1, 1, 1})}}});
  auto doc = [&](json cluster) {
    cluster["enabled"] = true;
    cluster["node_id"] = "n1";
    return json{{"catalog", etcd_catalog()}, {"users", users}, {"cluster", cluster}};
  };
  auto c = load_serve_config(doc(json::object()), f, no_env());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->server.users.peer.user, "guest");
  c = load_serve_config(doc({{"peer_user", "replicator"}, {"peer_password_file", pw}}), f,
                        no_env());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->server.users.peer.user, "replicator");
  EXPECT_EQ(c->server.users.peer.password, "r3pl");
  // A user only the live changes will have: taken as given.
  c = load_serve_config(doc({{"peer_user", "later"}, {"peer_password_file", pw}}), f, no_env());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->server.users.peer.user, "later");

  struct Case {
    json doc;
    std::string needle;
  };
  std::vector<Case> cases = {
      {doc({{"peer_user", "replicator"}}), "go together"},
      {doc({{"peer_password_file", pw}}), "cluster.peer_user"},
      {doc({{"peer_user", "guest"}, {"peer_password_file", pw}}), "is not user 'guest''s"},
      {doc({{"peer_user", "replicator"}, {"peer_password_file", open_pw}}), "chmod 600"},
      {doc({{"peer_user", "replicator"}, {"peer_password_file", dir.sub("none")}}),
       "cluster.peer_password_file: cannot read"},
  };
  for (const auto& k : cases) {
    auto r = load_serve_config(k.doc, f, no_env());
    ASSERT_FALSE(r.ok()) << k.doc.dump();
    EXPECT_NE(r.error().message.find(k.needle), std::string::npos) << r.error().message;
  }
}

// cluster.peer_tls: the nodes reach each other on their TLS listeners,
// verifying each other's certificates; only then may the plain listener
// be closed (tls.only) in a cluster.
TEST(ServeConfig, ClusterPeerTls) {
  ServeFlags f;
  f.data_dir = "/tmp/x";
  const json tls_on = {{"listen", "127.0.0.1:0"},
                       {"cert_file", "c.pem"},
                       {"key_file", "k.pem"},
                       {"ca_file", "ca.pem"}};
  auto doc = [&](json cluster, json tls) {
    cluster["enabled"] = true;
    cluster["node_id"] = "n1";
    return json{{"catalog", etcd_catalog()}, {"cluster", cluster}, {"tls", tls}};
  };
  auto c = load_serve_config(doc({{"peer_tls", true}}, tls_on), f, no_env());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_TRUE(c->cluster.peer_tls);
  EXPECT_TRUE(c->cluster.peer_tls_verify_host) << "on unless turned off";
  json only = tls_on;
  only["only"] = true;
  c = load_serve_config(doc({{"peer_tls", true}, {"peer_tls_verify_host", false}}, only), f,
                        no_env());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_TRUE(c->tls.only);
  EXPECT_FALSE(c->cluster.peer_tls_verify_host);
  // Off by default: a TLS listener alone changes nothing between nodes.
  c = load_serve_config(doc(json::object(), tls_on), f, no_env());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_FALSE(c->cluster.peer_tls);

  json no_ca = tls_on;
  no_ca.erase("ca_file");
  struct Case {
    json doc;
    std::string needle;
  };
  std::vector<Case> cases = {
      {doc(json::object(), only), "unless cluster.peer_tls"},
      {doc({{"peer_tls", true}}, json::object()), "tls.listen is not set"},
      {doc({{"peer_tls", true}}, no_ca), "tls.ca_file"},
      {doc({{"peer_tls", "yes"}}, tls_on), "cluster.peer_tls"},
      {doc({{"peer_tls_verify_host", 1}}, tls_on), "cluster.peer_tls_verify_host"},
  };
  for (const auto& k : cases) {
    auto r = load_serve_config(k.doc, f, no_env());
    ASSERT_FALSE(r.ok()) << k.doc.dump();
    EXPECT_NE(r.error().message.find(k.needle), std::string::npos) << r.error().message;
  }
}

// cluster.peer_auth "certificate": the nodes log in to each other with SASL
// EXTERNAL, by the certificates peer TLS verifies; no password is kept,
// and every setting that login needs is checked at start.
TEST(ServeConfig, ClusterPeerAuthByCertificate) {
  test::TempDir dir;
  const std::string pw = dir.sub("peer.pw");
  std::ofstream(pw) << "r3pl\n";
  ::chmod(pw.c_str(), 0600);
  ServeFlags f;
  f.data_dir = "/tmp/x";
  const json tls = {{"listen", "127.0.0.1:0"},
                    {"cert_file", "c.pem"},
                    {"key_file", "k.pem"},
                    {"ca_file", "ca.pem"},
                    {"verify_peer", true}};
  const json external = {{"auth_mechanisms", {"PLAIN", "EXTERNAL"}}};
  auto doc = [&](json cluster, json tls_section, json server) {
    cluster["enabled"] = true;
    cluster["node_id"] = "n1";
    cluster["peer_tls"] = cluster.value("peer_tls", true);
    return json{{"catalog", etcd_catalog()},
                {"cluster", cluster},
                {"tls", tls_section},
                {"server", server}};
  };
  const json cert = {{"peer_auth", "certificate"}, {"peer_user", "strata-peer"}};
  auto c = load_serve_config(doc(cert, tls, external), f, no_env());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->server.users.peer.user, "strata-peer");
  EXPECT_EQ(c->server.users.peer.mechanism, "EXTERNAL");
  EXPECT_EQ(c->server.users.peer.password, "");
  // One identity per node: each lists them all, its own among them.
  json per_node = cert;
  per_node["peer_users"] = {"strata-peer-0", "strata-peer", "strata-peer-2"};
  c = load_serve_config(doc(per_node, tls, external), f, no_env());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->cluster.peer_users,
            (std::vector<std::string>{"strata-peer-0", "strata-peer", "strata-peer-2"}));
  // The default stays the password.
  c = load_serve_config(doc(json::object(), tls, external), f, no_env());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->server.users.peer.mechanism, "PLAIN");

  json no_verify = tls;
  no_verify["verify_peer"] = false;
  json plain_links = cert;
  plain_links["peer_tls"] = false;
  json with_pw = cert;
  with_pw["peer_password_file"] = pw;
  json without_own = cert;
  without_own["peer_users"] = {"strata-peer-0", "strata-peer-1"};
  json empty_entry = cert;
  empty_entry["peer_users"] = {"strata-peer", ""};
  json twice = cert;
  twice["peer_users"] = {"strata-peer", "strata-peer"};
  struct Case {
    json doc;
    std::string needle;
  };
  std::vector<Case> cases = {
      {doc(plain_links, tls, external), "set cluster.peer_tls true"},
      {doc(cert, no_verify, external), "set tls.verify_peer true"},
      {doc(cert, tls, json::object()), "add \"EXTERNAL\" to server.auth_mechanisms"},
      {doc({{"peer_auth", "certificate"}}, tls, external), "cluster.peer_user"},
      {doc(with_pw, tls, external), "keeps no password"},
      {doc(without_own, tls, external), "and not 'strata-peer', this node's own"},
      {doc(empty_entry, tls, external), "cluster.peer_users"},
      {doc(twice, tls, external), "names \"strata-peer\" twice"},
      {doc({{"peer_auth", "kerberos"}}, tls, external), "cluster.peer_auth"},
  };
  for (const auto& k : cases) {
    auto r = load_serve_config(k.doc, f, no_env());
    ASSERT_FALSE(r.ok()) << k.doc.dump();
    EXPECT_NE(r.error().message.find(k.needle), std::string::npos) << r.error().message;
  }
}

// catalog.user and password_file: etcd's own authentication.
TEST(ServeConfig, EtcdLogin) {
  test::TempDir dir;
  const std::string pw = dir.sub("etcd.pw");
  std::ofstream(pw) << "e7cd\n";
  ::chmod(pw.c_str(), 0600);
  const std::string open_pw = dir.sub("open.pw");
  std::ofstream(open_pw) << "e7cd\n";
  ::chmod(open_pw.c_str(), 0640);
  ServeFlags f;
  f.data_dir = "/tmp/x";
  auto with = [](json extra) {
    json c = etcd_catalog();
    c.update(extra);
    return json{{"catalog", c}};
  };
  auto c = load_serve_config(with({{"user", "strata"}, {"password_file", pw}}), f, no_env());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->node.catalog_etcd.user, "strata");
  EXPECT_EQ(c->node.catalog_etcd.password, "e7cd");
  for (const auto& [extra, needle] : std::vector<std::pair<json, std::string>>{
           {{{"user", "strata"}}, "catalog.password_file"},
           {{{"password_file", pw}}, "catalog.user"},
           {{{"user", "strata"}, {"password_file", open_pw}}, "chmod 600"},
           {{{"user", "strata"}, {"password_file", dir.sub("none")}}, "cannot read"}}) {
    auto r = load_serve_config(with(extra), f, no_env());
    ASSERT_FALSE(r.ok()) << extra.dump();
    EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
  }
}

}  // namespace
}  // namespace strata::server
