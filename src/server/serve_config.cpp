#include "server/serve_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "common/assert.h"
#include "common/json_config.h"

namespace strata::server {
namespace {

using json = nlohmann::json;

Error bad(const std::string& path, const std::string& why) {
  return Error(Errc::invalid_argument, fmt::format("serve config: {}: {}", path, why));
}

// A list of strings, each one of `allowed`, without repeats.
Status string_list(JsonSection& s, std::string_view k, const std::vector<std::string>& allowed,
                   std::vector<std::string>* out) {
  const json* v = s.get(k);
  if (!v) return Status::OK();
  // No list of allowed values: any non-empty string.
  const std::string allowed_text = allowed.empty()
                                       ? std::string("non-empty strings")
                                       : fmt::format("\"{}\"", fmt::join(allowed, "\", \""));
  if (!v->is_array()) return JsonSection::bad(s.key(k), *v, "must be a list of " + allowed_text);
  std::vector<std::string> list;
  for (const auto& e : *v) {
    const bool ok =
        e.is_string() && (allowed.empty() ? !e.get<std::string>().empty()
                                          : std::find(allowed.begin(), allowed.end(),
                                                      e.get<std::string>()) != allowed.end());
    if (!ok) {
      return JsonSection::bad(s.key(k), *v,
                              allowed.empty() ? "each entry must be a non-empty string"
                                              : "each entry must be one of " + allowed_text);
    }
    if (std::find(list.begin(), list.end(), e.get<std::string>()) != list.end()) {
      return JsonSection::bad(s.key(k), *v, "names " + e.dump() + " twice");
    }
    list.push_back(e.get<std::string>());
  }
  *out = std::move(list);
  return Status::OK();
}

// The server section. Read through JsonSection as the node's and the
// object store's settings are: the same messages ("setting server.frame_max
// = 10: must be an integer in 8192..67108864"), unknown keys refused, and
// the keys read listed for serve_config_settings().
Status load_server_section(JsonSection s, ServerSettings* out) {
  STRATA_TRY(s.check_object());
  STRATA_TRY(s.string("listen", &out->listen));
  STRATA_TRY(s.string("advertised_host", &out->advertised_host));
  STRATA_TRY(s.integer_in("advertised_port", &out->advertised_port, 0, 65535));
  // Below 8 KiB a Tune could not carry a useful Publish; above 64 MiB one
  // connection's buffers would dwarf the rest of the server.
  STRATA_TRY(s.integer_in("frame_max", &out->frame_max, 8192, 64u << 20));
  STRATA_TRY(s.integer_in("heartbeat_s", &out->heartbeat_s, 0, 3600));
  STRATA_TRY(s.integer_in("threads", &out->threads, 1, 64));
  STRATA_TRY(s.integer_in("max_connections", &out->max_connections, 1, 1u << 20));
  STRATA_TRY(s.integer_in("max_connections_per_user", &out->max_connections_per_user, 0, 1u << 20));
  STRATA_TRY(
      s.integer_in("max_connections_per_vhost", &out->max_connections_per_vhost, 0, 1u << 20));
  // Up to a day: a larger value would be no deadline at all.
  STRATA_TRY(
      s.integer_in("consumer_update_timeout_ms", &out->consumer_update_timeout_ms, 1, 86'400'000));
  // Past 64 MiB one joined chunk would be a frame no client accepts.
  STRATA_TRY(s.integer_in("coalesce_bytes", &out->coalesce_bytes, 0, 64u << 20));
  // Beyond 100 ms a linger is a latency no publisher would accept.
  STRATA_TRY(s.integer_in("append_linger_us", &out->append_linger_us, 0, 100'000));
  // A minute at most: a closing connection holds its socket and buffers.
  STRATA_TRY(s.integer_in("close_linger_ms", &out->close_linger_ms, 0, 60'000));
  // At least 100 ms (a loaded machine's scheduling), at most ten minutes:
  // longer is no deadline for a stranger holding a socket.
  STRATA_TRY(s.integer_in("handshake_timeout_ms", &out->handshake_timeout_ms, 100, 600'000));
  // Up to 10 s: longer only holds the refused connection's socket.
  STRATA_TRY(s.integer_in("auth_failure_delay_ms", &out->auth_failure_delay_ms, 0, 10'000));
  // An hour at most: longer is no deadline for a client holding a buffer.
  STRATA_TRY(
      s.integer_in("partial_frame_timeout_ms", &out->partial_frame_timeout_ms, 100, 3'600'000));
  STRATA_TRY(s.integer_in("send_timeout_ms", &out->send_timeout_ms, 0, 3'600'000));
  // At least 1 MiB (a few delivery batches); at most 1 TiB.
  STRATA_TRY(s.integer_in("max_buffered_bytes", &out->max_buffered_bytes, 1u << 20, 1ull << 40));
  // Each series costs every scrape and Prometheus's memory; past 10 000 a
  // dashboard cannot show them anyway.
  STRATA_TRY(s.integer_in("consumer_group_metrics", &out->consumer_group_metrics, 0, 10'000));
  // 100 ms at the least (a sample reads every stream's status); at most
  // ten minutes (six points an hour).
  STRATA_TRY(s.integer_in("history_interval_ms", &out->history_interval_ms, 100, 600'000));
  STRATA_TRY(string_list(s, "auth_mechanisms", {"PLAIN", "AMQPLAIN", "EXTERNAL", "ANONYMOUS"},
                         &out->auth_mechanisms));
  STRATA_TRY(s.string("anonymous_user", &out->anonymous_user));
  if (out->auth_mechanisms.empty()) {
    return bad(s.key("auth_mechanisms"), "must name at least one mechanism");
  }
  const bool anonymous = std::find(out->auth_mechanisms.begin(), out->auth_mechanisms.end(),
                                   "ANONYMOUS") != out->auth_mechanisms.end();
  if (anonymous && out->anonymous_user.empty()) {
    return bad(s.key("anonymous_user"),
               "ANONYMOUS is offered, so it must name the user it logs in as");
  }
  return s.no_unknown();
}

// One value of `allowed` (or absent: *out unchanged).
Status one_of(JsonSection& s, std::string_view k, const std::vector<std::string>& allowed,
              std::string* out) {
  std::string v = *out;
  STRATA_TRY(s.string(k, &v));
  if (std::find(allowed.begin(), allowed.end(), v) == allowed.end()) {
    return bad(s.key(k), fmt::format("\"{}\" is not one of {}", v, fmt::join(allowed, ", ")));
  }
  *out = v;
  return Status::OK();
}

Status load_logging_section(JsonSection s, LogSettings* out) {
  STRATA_TRY(s.check_object());
  STRATA_TRY(one_of(s, "level", {"trace", "debug", "info", "warn", "error", "critical", "off"},
                    &out->level));
  STRATA_TRY(one_of(s, "format", {"text", "json"}, &out->format));
  return s.no_unknown();
}

Status load_tls_section(JsonSection s, TlsSettings* out) {
  STRATA_TRY(s.check_object());
  STRATA_TRY(s.string("listen", &out->listen));
  STRATA_TRY(s.integer_in("advertised_port", &out->advertised_port, 0, 65535));
  STRATA_TRY(s.string("cert_file", &out->cert_file));
  STRATA_TRY(s.string("key_file", &out->key_file));
  STRATA_TRY(s.string("ca_file", &out->ca_file));
  STRATA_TRY(string_list(s, "versions", {"tlsv1.2", "tlsv1.3"}, &out->versions));
  STRATA_TRY(s.string("ciphers", &out->ciphers));
  STRATA_TRY(s.string("ciphersuites", &out->ciphersuites));
  STRATA_TRY(s.boolean("verify_peer", &out->verify_peer));
  STRATA_TRY(s.boolean("fail_if_no_peer_cert", &out->fail_if_no_peer_cert));
  STRATA_TRY(s.string("cert_login_from", &out->cert_login_from));
  STRATA_TRY(s.boolean("only", &out->only));
  STRATA_TRY(s.no_unknown());
  if (out->cert_login_from != "distinguished_name" && out->cert_login_from != "common_name") {
    return bad(s.key("cert_login_from"), "must be \"distinguished_name\" or \"common_name\"");
  }
  if (!out->enabled()) {
    if (out->only) return bad(s.key("only"), "TLS only, but tls.listen is not set");
    return Status::OK();
  }
  if (auto hp = parse_host_port(s.key("listen"), out->listen); !hp.ok())
    return std::move(hp).error();
  if (out->cert_file.empty()) return bad(s.key("cert_file"), "required with tls.listen");
  if (out->key_file.empty()) return bad(s.key("key_file"), "required with tls.listen");
  if (out->versions.empty()) return bad(s.key("versions"), "must name at least one version");
  if (out->verify_peer && out->ca_file.empty()) {
    return bad(s.key("ca_file"),
               "required with verify_peer: client certificates are checked against it");
  }
  if (out->fail_if_no_peer_cert && !out->verify_peer) {
    return bad(s.key("fail_if_no_peer_cert"), "needs verify_peer");
  }
  return Status::OK();
}

// cluster.peer_user and peer_password_file: the nodes' login to each other.
// A user the configuration has must accept the password (a typo would
// otherwise show only as replica links refused at run time); one it does
// not have may be a user added live (management API).
Status apply_peer_login(const ClusterSettings& c, UserSettings* users) {
  if (c.peer_auth == "certificate") {
    if (c.peer_user.empty()) {
      return bad("cluster.peer_user",
                 "cluster.peer_auth \"certificate\" needs the user the nodes' certificates "
                 "name");
    }
    if (!c.peer_password_file.empty()) {
      return bad("cluster.peer_password_file",
                 "cluster.peer_auth \"certificate\" keeps no password: remove it");
    }
    users->peer = PeerLogin{c.peer_user, "", "EXTERNAL"};
    return Status::OK();
  }
  if (c.peer_user.empty() && c.peer_password_file.empty()) return Status::OK();
  if (c.peer_user.empty() || c.peer_password_file.empty()) {
    return bad(c.peer_user.empty() ? "cluster.peer_user" : "cluster.peer_password_file",
               "cluster.peer_user and cluster.peer_password_file go together");
  }
  STRATA_ASSIGN_OR_RETURN(std::string pw,
                          read_secret_file("cluster.peer_password_file", c.peer_password_file));
  if (users->access->find_user(c.peer_user) != nullptr &&
      users->access->authenticate_plain(c.peer_user, pw, /*loopback=*/true) !=
          auth::AuthOutcome::ok) {
    return bad("cluster.peer_password_file", fmt::format("the password in '{}' is not user '{}''s",
                                                         c.peer_password_file, c.peer_user));
  }
  users->peer = PeerLogin{c.peer_user, std::move(pw)};
  return Status::OK();
}

Status load_cluster_section(JsonSection s, ClusterSettings* out) {
  STRATA_TRY(s.check_object());
  STRATA_TRY(s.boolean("enabled", &out->enabled));
  STRATA_TRY(s.string("node_id", &out->node_id));
  // An hour at most: a longer lease would leave a dead owner's streams
  // unserved for that long.
  STRATA_TRY(s.integer_in("lease_ttl_ms", &out->lease_ttl_ms, 1000, 3'600'000));
  STRATA_TRY(s.integer_in("acquire_grace_ms", &out->acquire_grace_ms, 0, 3'600'000));
  STRATA_TRY(s.boolean("rebalance", &out->rebalance));
  STRATA_TRY(s.integer_in("rebalance_after_ms", &out->rebalance_after_ms, 0, 86'400'000));
  STRATA_TRY(s.string("peer_user", &out->peer_user));
  STRATA_TRY(string_list(s, "peer_users", {}, &out->peer_users));
  STRATA_TRY(s.string("peer_password_file", &out->peer_password_file));
  STRATA_TRY(s.string("peer_auth", &out->peer_auth));
  if (out->peer_auth != "password" && out->peer_auth != "certificate") {
    return JsonSection::bad(s.key("peer_auth"), out->peer_auth,
                            "must be \"password\" or \"certificate\"");
  }
  STRATA_TRY(s.boolean("replica_copies", &out->replica_copies));
  STRATA_TRY(s.boolean("peer_tls", &out->peer_tls));
  STRATA_TRY(s.boolean("peer_tls_verify_host", &out->peer_tls_verify_host));
  return s.no_unknown();
}

}  // namespace

cluster::OwnershipConfig ownership_config(const ClusterSettings& c, const node::NodeConfig& n,
                                          const std::string& advertise) {
  cluster::OwnershipConfig o;
  o.node_id = c.node_id;
  o.advertise = advertise;
  o.ns = n.catalog_etcd.ns;
  o.timing.lease_ttl_ms = c.lease_ttl_ms;
  o.timing.acquire_grace_ms = c.acquire_grace_ms;
  o.timing.rebalance_after_ms = c.rebalance ? c.rebalance_after_ms : -1;
  // Copies are what an election weighs: without them only a former
  // owner's disk could hold a tail.
  o.timing.elect_most_complete = c.replica_copies;
  return o;
}

Result<std::pair<std::string, uint16_t>> parse_host_port(const std::string& what,
                                                         const std::string& text) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    return bad(what, fmt::format("'{}' is not host:port", text));
  }
  std::string host = text.substr(0, colon);
  std::string port = text.substr(colon + 1);
  uint32_t p = 0;
  for (char c : port) {
    if (c < '0' || c > '9' || p > 65535) return bad(what, fmt::format("'{}': bad port", text));
    p = p * 10 + uint32_t(c - '0');
  }
  if (p > 65535) return bad(what, fmt::format("'{}': bad port", text));
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  return std::pair<std::string, uint16_t>(host, uint16_t(p));
}

Result<ServeConfig> load_serve_config(json document, const ServeFlags& flags,
                                      const objstore::EnvLookup& env) {
  if (document.is_null()) document = json::object();
  if (!document.is_object()) return bad("(document)", "not a JSON object");
  ServeConfig cfg;
  if (document.contains("server")) {
    STRATA_TRY(load_server_section(JsonSection(document["server"], "server"), &cfg.server));
    document.erase("server");
  }
  STRATA_ASSIGN_OR_RETURN(cfg.server.users, load_user_settings(&document));
  if (document.contains("cluster")) {
    STRATA_TRY(load_cluster_section(JsonSection(document["cluster"], "cluster"), &cfg.cluster));
    document.erase("cluster");
  }
  STRATA_TRY(apply_peer_login(cfg.cluster, &cfg.server.users));
  if (document.contains("tls")) {
    STRATA_TRY(load_tls_section(JsonSection(document["tls"], "tls"), &cfg.tls));
    document.erase("tls");
  }
  if (document.contains("logging")) {
    STRATA_TRY(load_logging_section(JsonSection(document["logging"], "logging"), &cfg.logging));
    document.erase("logging");
  }
  if (!flags.listen.empty()) cfg.server.listen = flags.listen;
  if (!flags.advertised_host.empty()) cfg.server.advertised_host = flags.advertised_host;
  if (flags.advertised_port != 0) {
    if (flags.advertised_port > 65535) return bad("--advertised-port", "above 65535");
    cfg.server.advertised_port = flags.advertised_port;
  }
  if (auto hp =
          parse_host_port(flags.listen.empty() ? "server.listen" : "--listen", cfg.server.listen);
      !hp.ok()) {
    return std::move(hp).error();
  }
  if (!flags.http.empty()) document["http"] = {{"listen", flags.http}};
  std::vector<objstore::ConfigOverride> overrides;
  if (!flags.s3_endpoint.empty()) {
    overrides.push_back({"backend", "s3", "--s3-endpoint"});
    overrides.push_back({"s3.endpoint", flags.s3_endpoint, "--s3-endpoint"});
  }
  if (!flags.bucket.empty()) overrides.push_back({"s3.bucket", flags.bucket, "--bucket"});
  // A cluster's default is what survives losing a node: confirm once a
  // persisted manifest holds the message, not once one disk does.
  const bool confirm_given = document.contains("tiering") && document["tiering"].is_object() &&
                             document["tiering"].contains("confirm");
  // (Without tiering the cluster check below names what is missing.)
  const bool tiering_off = document.contains("tiering") && document["tiering"].is_object() &&
                           document["tiering"].value("enabled", true) == false;
  if (cfg.cluster.enabled && !confirm_given && !tiering_off) {
    document["tiering"]["confirm"] = "remote";
  }
  cfg.cluster.local_confirms_asked =
      cfg.cluster.enabled && confirm_given && document["tiering"]["confirm"] == "local";
  auto node = node::load_node_config(document, flags.data_dir, env, overrides);
  if (!node.ok()) return std::move(node).error();
  cfg.node = std::move(node).value();
  // Replicated confirms wait for the other nodes' copies: a cluster that
  // confirms so by default keeps them.
  if (cfg.cluster.enabled && cfg.node.tiering.confirm == node::ConfirmMode::replicated) {
    cfg.cluster.replica_copies = true;
  }
  if (cfg.node.data_dir.empty()) return bad("data_dir", "not set (use --data-dir or \"data_dir\")");
  if (cfg.cluster.enabled) {
    if (cfg.node.catalog_backend != "etcd") {
      return bad("cluster.enabled",
                 fmt::format("a cluster needs the etcd catalog (catalog.backend \"etcd\"), not "
                             "\"{}\"",
                             cfg.node.catalog_backend));
    }
    // Another node recovers a stream from the bucket alone (a takeover, a
    // hand-over): without tiering there would be nothing to recover.
    if (!cfg.node.tiering.enabled) {
      return bad("cluster.enabled",
                 "a cluster needs tiering (tiering.enabled true): streams "
                 "move between nodes through the object store");
    }
    // Nodes log in to each other: one user's cleartext must be known here.
    if (cfg.server.users.peer.user.empty()) {
      return bad("cluster.enabled",
                 "the nodes of a cluster log in to each other as cluster.peer_user (with "
                 "cluster.peer_password_file) or else the first user given a \"password\" or "
                 "\"password_file\", and there is none (a definitions file holds only hashes)");
    }
    // Every node's own login counts as a peer link on every other node:
    // with per-node identities, each node's list names them all, its own
    // among them (a list without it would mean the lists differ).
    const auto& peers = cfg.cluster.peer_users;
    if (!peers.empty() &&
        std::find(peers.begin(), peers.end(), cfg.server.users.peer.user) == peers.end()) {
      return bad("cluster.peer_users",
                 fmt::format("names the users every node logs in to the others as, and not "
                             "'{}', this node's own (cluster.peer_user)",
                             cfg.server.users.peer.user));
    }
    if (auto st = cluster::validate(ownership_config(cfg.cluster, cfg.node, "")); !st.ok()) {
      return Error(Errc::invalid_argument, "serve config: " + st.error().message);
    }
    // The owner links, replica feeds and copies dial peers' listeners: the
    // plain ones unless cluster.peer_tls.
    if (cfg.tls.only && !cfg.cluster.peer_tls) {
      return bad("tls.only",
                 "the nodes of a cluster reach each other on the plain listener (server.listen) "
                 "unless cluster.peer_tls is true");
    }
    if (cfg.cluster.peer_tls) {
      if (!cfg.tls.enabled()) {
        return bad("cluster.peer_tls",
                   "the nodes reach each other on their TLS listeners, and tls.listen is not set");
      }
      // A peer is trusted by its certificate: without a CA any certificate
      // would do, and the link would be encrypted but not authenticated.
      if (cfg.tls.ca_file.empty()) {
        return bad("cluster.peer_tls",
                   "peers' certificates are verified against tls.ca_file, and it is not set");
      }
    }
    if (cfg.cluster.peer_auth == "certificate") {
      // EXTERNAL is offered only on a TLS connection whose client
      // certificate the listener verified.
      if (!cfg.cluster.peer_tls) {
        return bad("cluster.peer_auth",
                   "\"certificate\" logs the nodes in by their TLS certificates: set "
                   "cluster.peer_tls true");
      }
      if (!cfg.tls.verify_peer) {
        return bad("cluster.peer_auth",
                   "\"certificate\" needs the TLS listener to verify client certificates: set "
                   "tls.verify_peer true");
      }
      const auto& m = cfg.server.auth_mechanisms;
      if (std::find(m.begin(), m.end(), "EXTERNAL") == m.end()) {
        return bad("cluster.peer_auth",
                   "\"certificate\" logs the nodes in with SASL EXTERNAL: add \"EXTERNAL\" to "
                   "server.auth_mechanisms");
      }
    }
    // Streams are opened as this node comes to own them.
    cfg.node.open_streams_at_start = false;
  }
  // A stream recovered from the bucket (no local log) must not hold the
  // listener: clients are told it is not available yet, and retry.
  cfg.node.recover_in_background = true;
  return cfg;
}

SettingsRead serve_config_settings() {
  SettingsRead out = node::node_config_settings();
  // Absent sections: every key reads as absent, and is listed.
  ServerSettings server;
  ClusterSettings cluster;
  TlsSettings tls;
  STRATA_ASSERT(load_tls_section(JsonSection(json(nullptr), "tls", &out), &tls).ok(),
                "the tls section's reader refuses an absent section");
  out.insert("tls");
  LogSettings logging;
  STRATA_ASSERT(load_logging_section(JsonSection(json(nullptr), "logging", &out), &logging).ok(),
                "the logging section's reader refuses an absent section");
  out.insert("logging");
  STRATA_ASSERT(load_server_section(JsonSection(json(nullptr), "server", &out), &server).ok(),
                "the server section's reader refuses an absent section");
  STRATA_ASSERT(load_cluster_section(JsonSection(json(nullptr), "cluster", &out), &cluster).ok(),
                "the cluster section's reader refuses an absent section");
  out.insert("server");
  user_settings_read(&out);
  out.insert("cluster");
  return out;
}

Result<ServeConfig> load_serve_config_file(const std::string& path, const ServeFlags& flags,
                                           const objstore::EnvLookup& env) {
  // The same file rules as the node's and the object store's readers.
  STRATA_ASSIGN_OR_RETURN(json doc, read_json_config_file(path));
  return load_serve_config(std::move(doc), flags, env);
}

}  // namespace strata::server
