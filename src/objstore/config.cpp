#include "objstore/config.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <map>

#include "common/assert.h"
#include "common/json_config.h"
#include "objstore/fs_store.h"
#include "objstore/s3_store.h"

namespace strata::objstore {

namespace {

using json = nlohmann::json;

// Where each setting came from, to name it in validation errors.
using Origins = std::map<std::string, std::string>;

enum class Kind { string, integer, boolean };

struct Field {
  const char* path;  // inside the "objstore" section
  Kind kind;
  bool secret;
};

constexpr Field kFields[] = {
    {"backend", Kind::string, false},
    {"max_get_bytes", Kind::integer, false},
    {"fs.root", Kind::string, false},
    {"fs.create", Kind::boolean, false},
    {"s3.endpoint", Kind::string, false},
    {"s3.region", Kind::string, false},
    {"s3.bucket", Kind::string, false},
    {"s3.addressing", Kind::string, false},
    {"s3.access_key_id", Kind::string, false},
    {"s3.secret_access_key", Kind::string, true},
    {"s3.session_token", Kind::string, true},
    {"s3.connect_timeout_ms", Kind::integer, false},
    {"s3.request_timeout_ms", Kind::integer, false},
    {"s3.stall_timeout_ms", Kind::integer, false},
    {"s3.max_connections", Kind::integer, false},
    {"s3.tls_verify", Kind::boolean, false},
    {"s3.ca_file", Kind::string, false},
};

const Field* find_field(const std::string& path) {
  for (const auto& f : kFields)
    if (path == f.path) return &f;
  return nullptr;
}

// The raw values, by path, before they are typed into ObjectStoreConfig.
struct Value {
  std::string s;
  int64_t i = 0;
  bool b = false;
};
using Values = std::map<std::string, Value>;

std::string show(const std::string& origin, const std::string& text) {
  return fmt::format("{} = '{}'", origin, text);
}

Status set_from_text(Values& vals, Origins& origins, const std::string& path,
                     const std::string& text, const std::string& origin) {
  const Field* f = find_field(path);
  if (!f) {
    return Error(Errc::invalid_argument,
                 fmt::format("{}: unknown object store setting 'objstore.{}'", origin, path));
  }
  Value v;
  switch (f->kind) {
    case Kind::string:
      v.s = text;
      break;
    case Kind::integer: {
      auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v.i);
      if (ec != std::errc() || p != text.data() + text.size()) {
        return Error(Errc::invalid_argument, show(origin, text) + ": not an integer");
      }
      break;
    }
    case Kind::boolean:
      if (text == "true" || text == "1") {
        v.b = true;
      } else if (text == "false" || text == "0") {
        v.b = false;
      } else {
        return Error(Errc::invalid_argument, show(origin, text) + ": expected true or false");
      }
      break;
  }
  vals[path] = std::move(v);
  origins[path] = origin;
  return Status::OK();
}

Status set_from_json(Values& vals, Origins& origins, const Field& f, const json& j) {
  const std::string origin = "objstore." + std::string(f.path);
  Value v;
  switch (f.kind) {
    case Kind::string:
      if (!j.is_string()) {
        return Error(Errc::invalid_argument,
                     fmt::format("{} = {}: expected a string", origin, j.dump()));
      }
      v.s = j.get<std::string>();
      break;
    case Kind::integer:
      if (!j.is_number_integer()) {
        return Error(Errc::invalid_argument,
                     fmt::format("{} = {}: expected an integer", origin, j.dump()));
      }
      v.i = j.get<int64_t>();
      break;
    case Kind::boolean:
      if (!j.is_boolean()) {
        return Error(Errc::invalid_argument,
                     fmt::format("{} = {}: expected true or false", origin, j.dump()));
      }
      v.b = j.get<bool>();
      break;
  }
  vals[f.path] = std::move(v);
  origins[f.path] = origin;
  return Status::OK();
}

Error unknown_in_file(const std::string& path) {
  return Error(Errc::invalid_argument,
               fmt::format("config file: unknown object store setting '{}'", path));
}

// The config file's "objstore" section (null: absent), read as kFields
// says: the table decides what is read, any other key of the section (or
// of its "fs" and "s3" objects) is unknown. `read` (if set) collects the
// path of every setting asked for.
Status read_file_section(const json& section, Values& vals, Origins& origins, SettingsRead* read) {
  JsonSection top(section, "objstore", read);
  std::map<std::string, JsonSection> nested;  // "fs", "s3"
  for (const Field& f : kFields) {
    const std::string_view path = f.path;
    const size_t dot = path.find('.');
    JsonSection* s = &top;
    if (dot != std::string_view::npos) {
      const std::string name(path.substr(0, dot));
      auto it = nested.find(name);
      if (it == nested.end()) {
        const json* v = top.find(name);
        if (v && !v->is_object()) return unknown_in_file(top.key(name));
        it = nested.emplace(name, JsonSection(v ? *v : json(nullptr), top.key(name), read)).first;
      }
      s = &it->second;
    }
    const json* v = s->find(dot == std::string_view::npos ? path : path.substr(dot + 1));
    if (v) STRATA_TRY(set_from_json(vals, origins, f, *v));
  }
  if (auto k = top.first_unknown()) return unknown_in_file(*k);
  for (const auto& [name, s] : nested) {
    if (auto k = s.first_unknown()) return unknown_in_file(*k);
  }
  return Status::OK();
}

bool valid_bucket_name(const std::string& b) {
  if (b.size() < 3 || b.size() > 63) return false;
  for (char c : b) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  }
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  return alnum(b.front()) && alnum(b.back()) && b.find("..") == std::string::npos;
}

// "<origin> = <shown>: <why>", naming where the setting at `path` came from.
Error bad_setting(const Origins& origins, const char* path, const std::string& shown,
                  const std::string& why) {
  auto it = origins.find(path);
  return Error(Errc::invalid_argument,
               fmt::format("{} = {}: {}", it == origins.end() ? "" : it->second, shown, why));
}

// Gathers the raw settings, lowest precedence first so that later layers
// overwrite: the environment, the config file's "objstore" section, then
// the overrides (command-line flags).
Status collect_settings(const json& document, const EnvLookup& env,
                        const std::vector<ConfigOverride>& overrides, Values& vals,
                        Origins& origins) {
  // 1. Environment (the standard AWS variables).
  struct EnvMap {
    const char* var;
    const char* path;
  };
  constexpr EnvMap env_map[] = {
      {"AWS_ACCESS_KEY_ID", "s3.access_key_id"},
      {"AWS_SECRET_ACCESS_KEY", "s3.secret_access_key"},
      {"AWS_SESSION_TOKEN", "s3.session_token"},
      {"AWS_DEFAULT_REGION", "s3.region"},
      {"AWS_REGION", "s3.region"},  // wins over AWS_DEFAULT_REGION, as in the AWS SDKs
      {"AWS_ENDPOINT_URL", "s3.endpoint"},
      {"AWS_ENDPOINT_URL_S3", "s3.endpoint"},  // service-specific wins
      {"AWS_CA_BUNDLE", "s3.ca_file"},
  };
  if (env) {
    for (const auto& m : env_map) {
      if (auto v = env(m.var)) {
        STRATA_TRY(
            set_from_text(vals, origins, m.path, *v, std::string("environment variable ") + m.var));
      }
    }
  }
  // 2. The config file's "objstore" section.
  if (!document.is_null()) {
    if (!document.is_object()) {
      return Error(Errc::invalid_argument, "config file: top level is not a JSON object");
    }
    if (auto it = document.find("objstore"); it != document.end()) {
      if (!it->is_object()) {
        return Error(Errc::invalid_argument,
                     fmt::format("objstore = {}: expected an object", it->dump()));
      }
      STRATA_TRY(read_file_section(*it, vals, origins, nullptr));
    }
  }
  // 3. Overrides (command-line flags).
  for (const auto& o : overrides) {
    STRATA_TRY(set_from_text(vals, origins, o.path, o.value,
                             o.origin.empty() ? "override " + o.path : o.origin));
  }
  return Status::OK();
}

// Types the raw settings into `c` (defaults stay where nothing was set),
// checking enumerations and integer ranges.
Status apply_settings(Values& vals, const Origins& origins, ObjectStoreConfig& c) {
  auto has = [&](const char* p) { return vals.count(p) > 0; };
  if (has("backend")) {
    const std::string& b = vals["backend"].s;
    if (b == "fs") {
      c.backend = ObjectStoreConfig::Backend::fs;
    } else if (b == "s3") {
      c.backend = ObjectStoreConfig::Backend::s3;
    } else {
      return bad_setting(origins, "backend", "'" + b + "'", "expected \"fs\" or \"s3\"");
    }
  }
  if (has("max_get_bytes")) {
    const int64_t v = vals["max_get_bytes"].i;
    if (v < int64_t(kMinMaxGetBytes) || v > int64_t(kMaxMaxGetBytes)) {
      return bad_setting(origins, "max_get_bytes", std::to_string(v),
                         fmt::format("must be within {}..{}", kMinMaxGetBytes, kMaxMaxGetBytes));
    }
    c.max_get_bytes = uint64_t(v);
  }
  if (has("fs.root")) c.fs.root = vals["fs.root"].s;
  if (has("fs.create")) c.fs.create = vals["fs.create"].b;

  S3Config& s = c.s3;
  if (has("s3.endpoint")) s.endpoint = vals["s3.endpoint"].s;
  if (has("s3.region")) s.region = vals["s3.region"].s;
  if (has("s3.bucket")) s.bucket = vals["s3.bucket"].s;
  if (has("s3.access_key_id")) s.access_key_id = vals["s3.access_key_id"].s;
  if (has("s3.secret_access_key")) s.secret_access_key = vals["s3.secret_access_key"].s;
  if (has("s3.session_token")) s.session_token = vals["s3.session_token"].s;
  if (has("s3.tls_verify")) s.tls_verify = vals["s3.tls_verify"].b;
  if (has("s3.ca_file")) s.ca_file = vals["s3.ca_file"].s;
  // Virtual-hosted is AWS's default; a custom endpoint (MinIO, s3rver, ...)
  // usually wants path-style.
  s.addressing = s.endpoint.empty() ? Addressing::virtual_hosted : Addressing::path;
  if (has("s3.addressing")) {
    const std::string& a = vals["s3.addressing"].s;
    if (a == "path") {
      s.addressing = Addressing::path;
    } else if (a == "virtual") {
      s.addressing = Addressing::virtual_hosted;
    } else {
      return bad_setting(origins, "s3.addressing", "'" + a + "'",
                         "expected \"path\" or \"virtual\"");
    }
  }
  struct IntSetting {
    const char* path;
    int* target;
    int64_t lo, hi;
  };
  IntSetting ints[] = {
      {"s3.connect_timeout_ms", &s.connect_timeout_ms, 1, 600'000},
      {"s3.request_timeout_ms", &s.request_timeout_ms, 1, 86'400'000},
      {"s3.stall_timeout_ms", &s.stall_timeout_ms, 1'000, 3'600'000},
      {"s3.max_connections", &s.max_connections, 1, 1024},
  };
  for (const auto& is : ints) {
    if (!has(is.path)) continue;
    int64_t v = vals[is.path].i;
    if (v < is.lo || v > is.hi) {
      return bad_setting(origins, is.path, std::to_string(v),
                         fmt::format("must be within {}..{}", is.lo, is.hi));
    }
    *is.target = int(v);
  }
  return Status::OK();
}

// What backend "s3" needs: a valid bucket, a region, a well-formed endpoint
// if one is set, and both halves of the credentials.
Status validate_s3(const S3Config& s, const Origins& origins) {
  if (s.bucket.empty()) {
    return Error(Errc::invalid_argument,
                 "objstore.s3.bucket is required for backend \"s3\" (config file or --bucket)");
  }
  if (!valid_bucket_name(s.bucket)) {
    return bad_setting(
        origins, "s3.bucket", "'" + s.bucket + "'",
        "not a valid bucket name (3-63 of a-z 0-9 . -, starting and ending with a letter "
        "or digit)");
  }
  if (s.region.empty()) return bad_setting(origins, "s3.region", "''", "must not be empty");
  if (!s.endpoint.empty()) {
    auto scheme_end = s.endpoint.find("://");
    std::string scheme = scheme_end == std::string::npos ? "" : s.endpoint.substr(0, scheme_end);
    std::string rest = scheme_end == std::string::npos ? "" : s.endpoint.substr(scheme_end + 3);
    while (!rest.empty() && rest.back() == '/') rest.pop_back();
    if ((scheme != "http" && scheme != "https") || rest.empty() ||
        rest.find('/') != std::string::npos) {
      return bad_setting(origins, "s3.endpoint", "'" + s.endpoint + "'",
                         "expected http://host[:port] or https://host[:port], without a path");
    }
  }
  // A CA bundle that cannot be read would fail every request later, as a
  // TLS error far from its cause.
  if (!s.ca_file.empty() && ::access(s.ca_file.c_str(), R_OK) != 0) {
    return bad_setting(origins, "s3.ca_file", "'" + s.ca_file + "'",
                       std::string("cannot be read: ") + std::strerror(errno));
  }
  if (s.access_key_id.empty() || s.secret_access_key.empty()) {
    return Error(Errc::invalid_argument,
                 "s3 credentials missing: set objstore.s3.access_key_id and "
                 "objstore.s3.secret_access_key, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
  }
  return Status::OK();
}

}  // namespace

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v || !*v) return std::nullopt;
    return std::string(v);
  };
}

Result<ObjectStoreConfig> load_config(const json& document, const EnvLookup& env,
                                      const std::vector<ConfigOverride>& overrides) {
  Values vals;
  Origins origins;
  STRATA_TRY(collect_settings(document, env, overrides, vals, origins));
  ObjectStoreConfig c;
  STRATA_TRY(apply_settings(vals, origins, c));
  if (c.backend == ObjectStoreConfig::Backend::fs) {
    if (c.fs.root.empty()) {
      return Error(Errc::invalid_argument,
                   "objstore.fs.root is required for backend \"fs\" (config file or --root)");
    }
    return c;
  }
  STRATA_TRY(validate_s3(c.s3, origins));
  return c;
}

SettingsRead config_settings() {
  SettingsRead read;
  Values vals;
  Origins origins;
  // An absent section: every setting is asked for, none is there.
  Status st = read_file_section(json(nullptr), vals, origins, &read);
  STRATA_ASSERT(st.ok(), "the object store's reader refuses an absent section");
  return read;
}

Result<ObjectStoreConfig> load_config_file(const std::string& path, const EnvLookup& env,
                                           const std::vector<ConfigOverride>& overrides) {
  auto doc = read_json_config_file(path);
  if (!doc.ok()) return std::move(doc).error();
  auto c = load_config(*doc, env, overrides);
  if (!c.ok()) return std::move(c).error().with_context(path.empty() ? "config" : path);
  return c;
}

nlohmann::json describe_config(const ObjectStoreConfig& c) {
  json j;
  j["max_get_bytes"] = c.max_get_bytes;
  if (c.backend == ObjectStoreConfig::Backend::fs) {
    j["backend"] = "fs";
    j["fs"] = {{"root", c.fs.root}, {"create", c.fs.create}};
    return j;
  }
  const S3Config& s = c.s3;
  j["backend"] = "s3";
  j["s3"] = {{"endpoint", s.effective_endpoint()},
             {"region", s.region},
             {"bucket", s.bucket},
             {"addressing", s.addressing == Addressing::path ? "path" : "virtual"},
             {"access_key_id", s.access_key_id},
             {"secret_access_key", s.secret_access_key.empty() ? "" : "***"},
             {"session_token", s.session_token.empty() ? "" : "***"},
             {"connect_timeout_ms", s.connect_timeout_ms},
             {"request_timeout_ms", s.request_timeout_ms},
             {"stall_timeout_ms", s.stall_timeout_ms},
             {"max_connections", s.max_connections},
             {"tls_verify", s.tls_verify},
             {"ca_file", s.ca_file}};
  return j;
}

Result<std::unique_ptr<ObjectStore>> open_object_store(const ObjectStoreConfig& c, FileSystem& fs) {
  if (c.backend == ObjectStoreConfig::Backend::fs) {
    STRATA_ASSIGN_OR_RETURN(auto store,
                            FsObjectStore::open(fs, c.fs.root, c.fs.create, c.max_get_bytes));
    return std::unique_ptr<ObjectStore>(std::move(store));
  }
  STRATA_ASSIGN_OR_RETURN(auto store, S3ObjectStore::open(c.s3, c.max_get_bytes));
  return std::unique_ptr<ObjectStore>(std::move(store));
}

}  // namespace strata::objstore
