// Configuration of `strata serve`: the node's JSON document
// (node/node_config.h) plus two sections of its own, every setting
// optional; validation names the offending setting by its JSON path.
//
//   {
//     ... node settings (data_dir, objstore, catalog, log, tiering, ...),
//     "server": { "listen": "127.0.0.1:5552",           port 0: a free one
//                 "advertised_host": "", "advertised_port": 0,   "" / 0: the listener's
//                 "frame_max": 1048576, "heartbeat_s": 60, "threads": 2,
//                 "max_connections": 1024, "max_connections_per_user": 0,
//                 "max_connections_per_vhost": 0,            0: no limit
//                 "consumer_update_timeout_ms": 60000,
//                 "coalesce_bytes": 0,                         0: chunks as stored
//                 "append_linger_us": 2000,                    0: no linger
//                 "close_linger_ms": 2000,
//                 "handshake_timeout_ms": 10000, "auth_failure_delay_ms": 1000,
//                 "partial_frame_timeout_ms": 60000,
//                 "send_timeout_ms": 300000 },                 0: no limit
//     "users", "vhosts", "permissions", "loopback_users",
//     "definitions_file": who may log in and do what (server/serve_users.h);
//                  default: guest/guest, everything in "/", loopback only
//     "tls": { "listen": "0.0.0.0:5551", "cert_file", "key_file", "ca_file",
//              "versions": ["tlsv1.2", "tlsv1.3"], "ciphers", "ciphersuites",
//              "verify_peer": false, "fail_if_no_peer_cert": false,
//              "cert_login_from": "distinguished_name", "only": false,
//              "advertised_port": 0 }          server/tls_context.h
//     "cluster": { "enabled": false, "node_id": "n1",
//                  "lease_ttl_ms": 5000, "acquire_grace_ms": 0,     0: the TTL
//                  "rebalance": true, "rebalance_after_ms": 0 }     0: twice the TTL
//   }
//
// A cluster node (docs/ARCHITECTURE.md, "Stream ownership") needs the etcd
// catalog backend: its lease, registration and owner keys live in the
// catalog's etcd (same endpoints, same namespace), so there is one place to
// name the etcd cluster.
//
// `guest` is accepted only from a loopback peer, like RabbitMQ's default
// (its password is public knowledge); `loopback_users` changes that.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cluster/ownership.h"
#include "common/result.h"
#include "node/node_config.h"
#include "server/serve_users.h"

namespace strata::server {

struct ServerSettings {
  std::string listen = "127.0.0.1:5552";
  std::string advertised_host;   // empty: the listener's host
  uint32_t advertised_port = 0;  // 0: the listener's port
  // Largest frame the server accepts and proposes in Tune (bytes).
  uint32_t frame_max = 1u << 20;
  uint32_t heartbeat_s = 60;
  uint32_t threads = 2;  // event-loop threads for every connection
  uint32_t max_connections = 1024;
  // Open connections per user and per virtual host (0: no limit);
  // connection_quota.h.
  uint32_t max_connections_per_user = 0;
  uint32_t max_connections_per_vhost = 0;
  // How long a single-active consumer has to answer a ConsumerUpdate
  // before it is failed and its connection closed (RabbitMQ's
  // `rabbitmq_stream.request_timeout`, 60 s by default).
  uint32_t consumer_update_timeout_ms = 60'000;
  // Consecutive stored chunks a delivery reads together go out as one
  // chunk of up to this many data bytes (server/delivery.h; 0: as stored).
  // Off by default: a joined chunk gives its later messages the first
  // chunk's id and timestamp. Stored chunks are made larger instead
  // (append_linger_us).
  uint32_t coalesce_bytes = 0;
  // Under `fsync = never` and sustained publishing, how long a stream's
  // appender gathers Publish frames into one chunk (server/stream_appender.h,
  // AppenderOptions::linger).
  uint32_t append_linger_us = 2000;
  // After answering a client's Close, how long the connection stays open
  // to answer a repeated Close (server/connection.cpp, Connection::on
  // CloseRequest) unless the client closes its side first; 0: closed as
  // soon as the answer is sent.
  uint32_t close_linger_ms = 2000;
  // Each step of the handshake (PeerProperties, SASL, Tune, Open) must come
  // within this of the previous one, else the connection is closed
  // (RabbitMQ's connection_negotiation_step_timeout, 10 s).
  uint32_t handshake_timeout_ms = 10'000;
  // A failed login is answered only after this, and its connection closed.
  uint32_t auth_failure_delay_ms = 1000;
  // After Open, a frame begun must be complete within this (else the
  // connection is closed): a client trickling a frame byte by byte keeps
  // heartbeats happy but holds its buffer (frame_channel.h).
  uint32_t partial_frame_timeout_ms = 60'000;
  // After Open, a write to a client must end within this (0: no limit),
  // else the connection is closed: a client that stopped reading, with
  // heartbeats off (0 at Tune), would otherwise keep what is held for it
  // (max_buffered_bytes) until it goes. Generous, so a slow reader is not
  // taken for a stopped one: one write is at most a frame or a batch.
  uint32_t send_timeout_ms = 300'000;
  // Bytes the server may hold for all its clients that have not read them
  // (replies, confirms, deliveries read ahead) before each connection with
  // more than a little of its own unread waits for its client
  // (server/frame_channel.h). A soft bound: connections keeping up go on.
  uint64_t max_buffered_bytes = 256ull << 20;
  // At most this many series of strata_consumer_group_offset_lag (the
  // largest lags first): one per stream and named consumer group, a label
  // set that clients choose; 0: none.
  uint32_t consumer_group_metrics = 100;
  // How often the last hour the console charts (GET /api/history) is
  // sampled, while the node has an HTTP endpoint.
  uint32_t history_interval_ms = 10'000;
  // The SASL mechanisms offered, of PLAIN, AMQPLAIN, EXTERNAL (a verified
  // TLS client certificate names the user) and ANONYMOUS (logs in as
  // anonymous_user); RabbitMQ's `auth_mechanisms`, same default.
  std::vector<std::string> auth_mechanisms = {"PLAIN", "AMQPLAIN"};
  std::string anonymous_user;
  // Users, vhosts, permissions; the node's own login to its peers.
  UserSettings users = default_user_settings();
};

// The stream protocol over TLS (server/tls_context.h): a second listener,
// RabbitMQ's `stream.listeners.ssl` and `ssl_options`.
struct TlsSettings {
  // "host:port" of the TLS listener; empty: none (RabbitMQ's port is 5551).
  std::string listen;
  uint32_t advertised_port = 0;  // 0: the TLS listener's port
  std::string cert_file;         // PEM: the server's certificate (chain)
  std::string key_file;          // PEM: its private key
  std::string ca_file;           // PEM: CAs client certificates are checked against
  // Protocol versions accepted: "tlsv1.2", "tlsv1.3".
  std::vector<std::string> versions = {"tlsv1.2", "tlsv1.3"};
  std::string ciphers;       // TLS 1.2 cipher list (OpenSSL syntax); "": OpenSSL's default
  std::string ciphersuites;  // TLS 1.3 suites (OpenSSL syntax); "": OpenSSL's default
  // Ask for a client certificate and check it against ca_file; with
  // fail_if_no_peer_cert, a client without one is refused.
  bool verify_peer = false;
  bool fail_if_no_peer_cert = false;
  // Which part of a verified client certificate names the EXTERNAL user:
  // "distinguished_name" (RFC 4514, as RabbitMQ's default) or "common_name".
  std::string cert_login_from = "distinguished_name";
  // The plain listener (server.listen) is closed: TLS only.
  bool only = false;

  bool enabled() const { return !listen.empty(); }
};

// Several nodes over one bucket: stream ownership on etcd leases
// (cluster/ownership.h).
struct ClusterSettings {
  bool enabled = false;
  std::string node_id;  // [A-Za-z0-9._-]{1,128}; required when enabled
  // Whole seconds (etcd leases have a TTL in seconds), at least 1000.
  int64_t lease_ttl_ms = 5000;
  // How long a stream stays ownerless before any node (not only its
  // placement's first choice) takes it; 0: the lease TTL.
  int64_t acquire_grace_ms = 0;
  // Hand served streams over to their placement's first choice once that
  // node has been registered for rebalance_after_ms (0: twice the TTL), so
  // a node that joins takes its share (cluster/ownership_core.h).
  bool rebalance = true;
  int64_t rebalance_after_ms = 0;
  // The user the nodes log in to each other as (owner links, replica
  // feeds), its password in a file only its owner may read; both or
  // neither. Neither: the first user given a cleartext password.
  std::string peer_user;
  std::string peer_password_file;
  // The users whose logins are the cluster's own links here (empty: only
  // peer_user). With one identity per node (peer_auth "certificate", each
  // node's certificate naming its own user), every node lists them all.
  std::vector<std::string> peer_users;
  // "password": the nodes log in with peer_user's password (SASL PLAIN).
  // "certificate": with SASL EXTERNAL over TLS (peer_tls): each node's
  // certificate (tls.cert_file, presented as its client certificate) names
  // peer_user as tls.cert_login_from reads it, no password is kept, and a
  // node is trusted only as far as the CA that signed its certificate.
  std::string peer_auth = "password";
  // tiering.confirm was set to "local" in the document: a cluster then
  // confirms what one node's disk holds, and says so at start. Unset, a
  // cluster confirms remote (load_serve_config).
  bool local_confirms_asked = false;
  // Every node keeps a copy of the unuploaded tail of each stream it does
  // not own (server/replica_copier.h), which it keeps if it takes the
  // stream over.
  bool replica_copies = false;
  // The nodes reach each other on their TLS listeners (tls.listen): each
  // registers its TLS address beside its plain one, dials its peers' over
  // TLS, verifies their certificates against tls.ca_file and presents its
  // own (tls.cert_file). With peer_tls_verify_host, a peer's certificate
  // must also name the host the peer advertises.
  bool peer_tls = false;
  bool peer_tls_verify_host = true;
};

// How `strata serve` logs (its "logging" section).
struct LogSettings {
  // trace, debug, info, warn, error, critical or off; --log-level wins.
  std::string level = "info";
  // "text", or "json": one JSON object per line (ts in UTC, level, msg).
  std::string format = "text";
};

struct ServeConfig {
  node::NodeConfig node;
  LogSettings logging;
  ServerSettings server;
  ClusterSettings cluster;
  TlsSettings tls;
};

// Command-line values that override the document ("" / 0: not given).
struct ServeFlags {
  std::string data_dir;
  std::string listen;
  std::string advertised_host;
  uint32_t advertised_port = 0;
  std::string http;
  std::string s3_endpoint;
  std::string bucket;
};

Result<ServeConfig> load_serve_config(nlohmann::json document, const ServeFlags& flags,
                                      const objstore::EnvLookup& env);
// Every setting path load_serve_config accepts: the node's
// (node::node_config_settings()) and the keys of server, users, tls,
// logging and cluster,
// with the sections holding them. docs/CONFIGURATION.md documents each
// (tests/docs checks it).
SettingsRead serve_config_settings();
// Reads the JSON file (empty path: no file) and calls load_serve_config.
Result<ServeConfig> load_serve_config_file(const std::string& path, const ServeFlags& flags,
                                           const objstore::EnvLookup& env);

// The ownership settings of a cluster node advertising `advertise`.
cluster::OwnershipConfig ownership_config(const ClusterSettings& c, const node::NodeConfig& n,
                                          const std::string& advertise);

// "host:port" -> host and port. Errors name `what` and the text.
Result<std::pair<std::string, uint16_t>> parse_host_port(const std::string& what,
                                                         const std::string& text);

}  // namespace strata::server
