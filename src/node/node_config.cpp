#include "node/node_config.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "catalog/etcd_catalog.h"
#include "common/assert.h"
#include "common/fs.h"
#include "common/json_config.h"
#include "common/secret_file.h"
#include "etcd/etcd_client.h"
#include "tier/object_keys.h"

namespace strata::node {

using json = nlohmann::json;

namespace {

Error bad(const std::string& path, const json& v, std::string_view why) {
  return JsonSection::bad(path, v, why);
}

Status read_retention(JsonSection s, std::optional<uint64_t>* max_bytes,
                      std::optional<int64_t>* max_age_ms) {
  STRATA_TRY(s.check_object());
  STRATA_TRY(s.optional_integer("max_bytes", max_bytes));
  STRATA_TRY(s.optional_integer("max_age_ms", max_age_ms));
  return s.no_unknown();
}

Status read_etcd_catalog(JsonSection& s, EtcdCatalogSettings& e) {
  const json* eps = s.get("endpoints");
  if (!eps) return bad("catalog.endpoints", json(nullptr), "is required with backend \"etcd\"");
  if (!eps->is_array() || eps->empty()) {
    return bad("catalog.endpoints", *eps, "must be a non-empty array of \"http://host:port\"");
  }
  for (const auto& ep : *eps) {
    if (!ep.is_string()) return bad("catalog.endpoints", *eps, "must hold only strings");
    e.endpoints.push_back(ep.get<std::string>());
  }
  etcd::ClientOptions o;
  o.endpoints = e.endpoints;
  if (Status v = etcd::validate(o); !v.ok()) {
    return bad("catalog.endpoints", *eps, v.error().message);
  }
  STRATA_TRY(s.string("namespace", &e.ns));
  STRATA_TRY(catalog::validate_namespace(e.ns));
  STRATA_TRY(s.integer("request_timeout_ms", &e.request_timeout_ms));
  STRATA_TRY(s.integer("attempt_timeout_ms", &e.attempt_timeout_ms));
  STRATA_TRY(s.string("ca_file", &e.ca_file));
  STRATA_TRY(s.string("cert_file", &e.cert_file));
  STRATA_TRY(s.string("key_file", &e.key_file));
  // Files that cannot be read would fail every request later, as a TLS
  // error far from its cause.
  for (const auto& [key, file] : {std::pair<const char*, const std::string&>{"ca_file", e.ca_file},
                                  {"cert_file", e.cert_file},
                                  {"key_file", e.key_file}}) {
    if (!file.empty() && ::access(file.c_str(), R_OK) != 0) {
      return bad(s.key(key), file, std::string("cannot be read: ") + std::strerror(errno));
    }
  }
  if (e.cert_file.empty() != e.key_file.empty()) {
    return bad(s.key(e.cert_file.empty() ? "cert_file" : "key_file"), "",
               "a client certificate needs both cert_file and key_file");
  }
  STRATA_TRY(s.string("user", &e.user));
  STRATA_TRY(s.string("password_file", &e.password_file));
  if (e.user.empty() != e.password_file.empty()) {
    return bad(s.key(e.user.empty() ? "user" : "password_file"), "",
               "etcd authentication needs both user and password_file");
  }
  if (!e.password_file.empty()) {
    auto pw = read_secret_file(e.password_file);
    if (!pw.ok()) return bad(s.key("password_file"), e.password_file, pw.error().message);
    e.password = std::move(pw).value();
  }
  return Status::OK();
}

Status read_log(JsonSection s, NodeConfig& c) {
  STRATA_TRY(s.check_object());
  std::string fsync;
  STRATA_TRY(s.string("fsync", &fsync));
  if (!fsync.empty()) {
    auto p = log::parse_fsync_policy(fsync);
    if (!p.ok()) return bad(s.key("fsync"), fsync, "must be always, interval or never");
    c.fsync = *p;
  }
  STRATA_TRY(s.integer("fsync_interval_ms", &c.fsync_interval_ms));
  STRATA_TRY(s.integer("segment_bytes", &c.segment_bytes));
  if (c.segment_bytes < 4096) {
    return bad(s.key("segment_bytes"), c.segment_bytes, "must be at least 4096");
  }
  STRATA_TRY(read_retention(s.sub("retention"), &c.local_retention.max_bytes,
                            &c.local_retention.max_age_ms));
  return s.no_unknown();
}

Status read_tiering(JsonSection s, TieringSettings& t) {
  STRATA_TRY(s.check_object());
  STRATA_TRY(s.boolean("enabled", &t.enabled));
  STRATA_TRY(s.string("key_prefix", &t.key_prefix));
  STRATA_TRY(s.integer("fragment_target_bytes", &t.fragment_target_bytes));
  // 0 disables the time bound (size only, as in the original).
  STRATA_TRY(s.integer("fragment_max_age_ms", &t.fragment_max_age_ms, /*allow_zero=*/true));
  STRATA_TRY(s.integer("persist_threshold", &t.persist_threshold));
  STRATA_TRY(s.integer("persist_interval_ms", &t.persist_interval_ms));
  STRATA_TRY(s.integer("request_timeout_ms", &t.request_timeout_ms));
  STRATA_TRY(s.integer("delete_grace_ms", &t.delete_grace_ms, /*allow_zero=*/true));
  STRATA_TRY(s.integer("orphan_grace_ms", &t.orphan_grace_ms, /*allow_zero=*/true));
  // 0 caches no group (every lookup reads them).
  STRATA_TRY(s.integer("group_cache_bytes", &t.group_cache_bytes, /*allow_zero=*/true));
  STRATA_TRY(read_retention(s.sub("retention"), &t.retention.max_bytes, &t.retention.max_age_ms));
  std::string confirm(confirm_mode_name(t.confirm));
  STRATA_TRY(s.string("confirm", &confirm));
  auto mode = parse_confirm_mode(confirm);
  if (!mode) {
    return bad(s.key("confirm"), confirm, "must be \"local\", \"remote\" or \"replicated\"");
  }
  t.confirm = *mode;
  // 0: cut at once when a remote confirm waits (one fragment per append).
  STRATA_TRY(s.integer("remote_confirm_cut_ms", &t.remote_confirm_cut_ms, /*allow_zero=*/true));
  STRATA_TRY(s.integer("remote_confirm_timeout_ms", &t.remote_confirm_timeout_ms));
  if (t.confirm != ConfirmMode::local && !t.enabled) {
    return bad(s.key("confirm"), confirm,
               "requires tiering.enabled: without a remote tier nothing can be confirmed as "
               "remote-durable");
  }
  if (auto k = tier::ObjectKeys::make(t.key_prefix, "stream"); !k.ok()) {
    return bad(s.key("key_prefix"), t.key_prefix, k.error().message);
  }
  return s.no_unknown();
}

Status read_governor(JsonSection s, tier::GovernorConfig& g) {
  STRATA_TRY(s.check_object());
  uint64_t rate = 0;
  STRATA_TRY(s.integer("max_bytes_per_sec", &rate, /*allow_zero=*/true));  // 0: unlimited
  if (rate > 0) g.rate_bytes_per_sec = rate;
  STRATA_TRY(s.integer("burst_bytes", &g.burst_bytes, /*allow_zero=*/true));
  STRATA_TRY(s.integer("max_concurrent", &g.max_concurrent));
  return s.no_unknown();
}

}  // namespace

std::string_view confirm_mode_name(ConfirmMode m) {
  return m == ConfirmMode::remote       ? "remote"
         : m == ConfirmMode::replicated ? "replicated"
                                        : "local";
}

std::optional<ConfirmMode> parse_confirm_mode(std::string_view text) {
  if (text == "local") return ConfirmMode::local;
  if (text == "remote") return ConfirmMode::remote;
  if (text == "replicated") return ConfirmMode::replicated;
  return std::nullopt;
}

log::LogOptions NodeConfig::log_options() const {
  log::LogOptions o;
  o.fsync = fsync;
  o.fsync_interval_ms = fsync_interval_ms;
  o.max_segment_bytes = segment_bytes;
  o.retention = local_retention;
  o.create_if_missing = false;
  return o;
}

namespace {

// The reader itself; `read` (if set) collects every setting path it asks
// for, which is what node_config_settings() lists.
Result<NodeConfig> read_node_config(const json& doc, const std::string& data_dir,
                                    const objstore::EnvLookup& env,
                                    const std::vector<objstore::ConfigOverride>& objstore_flags,
                                    SettingsRead* read) {
  NodeConfig c;
  JsonSection top(doc, "", read);
  STRATA_TRY(top.check_object());
  STRATA_TRY(top.string("data_dir", &c.data_dir));
  if (!data_dir.empty()) c.data_dir = data_dir;
  if (c.data_dir.empty()) {
    return Error(Errc::invalid_argument,
                 "setting data_dir: required (in the config file or --data-dir)");
  }

  // The object store: objstore/config.h's loader, with the node's default
  // of a directory store under the data directory.
  const json* os = top.get("objstore");
  std::vector<objstore::ConfigOverride> overrides;
  bool has_root = os && os->is_object() && os->contains("fs") && (*os)["fs"].is_object() &&
                  (*os)["fs"].contains("root");
  bool flag_root = false;
  for (const auto& f : objstore_flags) flag_root = flag_root || f.path == "fs.root";
  if (!has_root && !flag_root) {
    overrides.push_back(
        {"fs.root", path_join(c.data_dir, "objects"), "default <data_dir>/objects"});
  }
  for (const auto& f : objstore_flags) overrides.push_back(f);
  json os_doc = json::object();
  if (os) os_doc["objstore"] = *os;
  auto oc = objstore::load_config(os_doc, env, overrides);
  if (!oc.ok()) return std::move(oc).error();
  c.objstore = std::move(oc).value();

  JsonSection cat = top.sub("catalog");
  STRATA_TRY(cat.check_object());
  STRATA_TRY(cat.string("backend", &c.catalog_backend));
  if (c.catalog_backend == "embedded") {
    STRATA_TRY(cat.integer("capacity", &c.catalog_capacity));
  } else if (c.catalog_backend == "etcd") {
    STRATA_TRY(read_etcd_catalog(cat, c.catalog_etcd));
  } else {
    return bad("catalog.backend", c.catalog_backend, "must be \"embedded\" or \"etcd\"");
  }
  STRATA_TRY(cat.no_unknown());

  STRATA_TRY(read_log(top.sub("log"), c));
  STRATA_TRY(read_tiering(top.sub("tiering"), c.tiering));
  STRATA_TRY(read_governor(top.sub("governor"), c.governor));

  JsonSection th = top.sub("threads");
  STRATA_TRY(th.check_object());
  STRATA_TRY(th.integer("io", &c.io_threads));
  STRATA_TRY(th.integer("blocking", &c.blocking_threads));
  STRATA_TRY(th.no_unknown());
  if (c.io_threads > 64) return bad("threads.io", c.io_threads, "must be at most 64");
  if (c.blocking_threads > 1024) {
    return bad("threads.blocking", c.blocking_threads, "must be at most 1024");
  }

  JsonSection disk = top.sub("disk");
  STRATA_TRY(disk.check_object());
  STRATA_TRY(disk.integer("free_limit_bytes", &c.disk_free_limit_bytes, /*allow_zero=*/true));
  STRATA_TRY(disk.integer_in("check_interval_ms", &c.disk_check_interval_ms, 10, 60'000));
  STRATA_TRY(disk.no_unknown());

  JsonSection http = top.sub("http");
  STRATA_TRY(http.check_object());
  STRATA_TRY(http.string("listen", &c.http_listen));
  STRATA_TRY(http.no_unknown());

  STRATA_TRY(top.no_unknown());
  return c;
}

}  // namespace

Result<NodeConfig> load_node_config(const json& doc, const std::string& data_dir,
                                    const objstore::EnvLookup& env,
                                    const std::vector<objstore::ConfigOverride>& objstore_flags) {
  return read_node_config(doc, data_dir, env, objstore_flags, nullptr);
}

SettingsRead node_config_settings() {
  SettingsRead read;
  // Two documents, because the catalog's settings depend on its backend;
  // every other key is read whether present or not.
  const json embedded = {{"data_dir", "/"}};
  const json etcd = {{"data_dir", "/"},
                     {"catalog", {{"backend", "etcd"}, {"endpoints", {"http://127.0.0.1:2379"}}}}};
  for (const json& doc : {embedded, etcd}) {
    auto c = read_node_config(doc, "", objstore::EnvLookup(), {}, &read);
    STRATA_ASSERT(c.ok(), "the node's reader refuses a document of defaults");
  }
  for (const auto& p : objstore::config_settings()) read.insert(p);
  return read;
}

Result<NodeConfig> load_node_config_file(const std::string& path, const std::string& data_dir,
                                         const objstore::EnvLookup& env,
                                         const std::vector<objstore::ConfigOverride>& flags) {
  auto doc = read_json_config_file(path);
  if (!doc.ok()) return std::move(doc).error();
  auto c = load_node_config(*doc, data_dir, env, flags);
  if (!c.ok()) return std::move(c).error().with_context(path.empty() ? "config" : path);
  return c;
}

json describe_node_config(const NodeConfig& c) {
  auto opt = [](const auto& o) -> json { return o ? json(*o) : json(nullptr); };
  return {
      {"data_dir", c.data_dir},
      {"objstore", objstore::describe_config(c.objstore)},
      {"catalog", c.catalog_backend == "etcd"
                      ? json{{"backend", "etcd"},
                             {"endpoints", c.catalog_etcd.endpoints},
                             {"namespace", c.catalog_etcd.ns},
                             {"request_timeout_ms", c.catalog_etcd.request_timeout_ms},
                             {"attempt_timeout_ms", c.catalog_etcd.attempt_timeout_ms},
                             {"ca_file", c.catalog_etcd.ca_file},
                             {"cert_file", c.catalog_etcd.cert_file},
                             {"key_file", c.catalog_etcd.key_file},
                             {"user", c.catalog_etcd.user},
                             {"password_file", c.catalog_etcd.password_file}}
                      : json{{"backend", "embedded"}, {"capacity", c.catalog_capacity}}},
      {"log",
       {{"fsync", log::fsync_policy_name(c.fsync)},
        {"fsync_interval_ms", c.fsync_interval_ms},
        {"segment_bytes", c.segment_bytes},
        {"retention",
         {{"max_bytes", opt(c.local_retention.max_bytes)},
          {"max_age_ms", opt(c.local_retention.max_age_ms)}}}}},
      {"tiering",
       {{"enabled", c.tiering.enabled},
        {"key_prefix", c.tiering.key_prefix},
        {"fragment_target_bytes", c.tiering.fragment_target_bytes},
        {"fragment_max_age_ms", c.tiering.fragment_max_age_ms},
        {"persist_threshold", c.tiering.persist_threshold},
        {"persist_interval_ms", c.tiering.persist_interval_ms},
        {"request_timeout_ms", c.tiering.request_timeout_ms},
        {"delete_grace_ms", c.tiering.delete_grace_ms},
        {"orphan_grace_ms", c.tiering.orphan_grace_ms},
        {"group_cache_bytes", c.tiering.group_cache_bytes},
        {"confirm", confirm_mode_name(c.tiering.confirm)},
        {"remote_confirm_cut_ms", c.tiering.remote_confirm_cut_ms},
        {"remote_confirm_timeout_ms", c.tiering.remote_confirm_timeout_ms},
        {"retention",
         {{"max_bytes", opt(c.tiering.retention.max_bytes)},
          {"max_age_ms", opt(c.tiering.retention.max_age_ms)}}}}},
      {"governor",
       {{"max_bytes_per_sec", c.governor.rate_bytes_per_sec.value_or(0)},
        {"burst_bytes", c.governor.burst_bytes},
        {"max_concurrent", c.governor.max_concurrent}}},
      {"threads", {{"io", c.io_threads}, {"blocking", c.blocking_threads}}},
      {"disk",
       {{"free_limit_bytes", c.disk_free_limit_bytes},
        {"check_interval_ms", c.disk_check_interval_ms}}},
      {"http", {{"listen", c.http_listen}}},
  };
}

}  // namespace strata::node
