#include "auth/definitions.h"

#include <algorithm>
#include <optional>

namespace strata::auth {

using json = nlohmann::json;

namespace {

// Where an entry sits, for messages: "defs.json: users[2] ('bob')".
struct Where {
  std::string_view source;
  std::string_view section;
  size_t index;
  std::string name;

  Error error(std::string_view what) const {
    std::string s =
        std::string(source) + ": " + std::string(section) + "[" + std::to_string(index) + "]";
    if (!name.empty()) s += " ('" + name + "')";
    return Error(Errc::invalid_argument, s + ": " + std::string(what));
  }
};

// A string member: nullopt when absent, an error when present as another
// JSON type (RabbitMQ would crash on it later; better to say where now).
Result<std::optional<std::string>> opt_string(const json& obj, const char* key, const Where& w) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::optional<std::string>();
  if (!it->is_string()) {
    return w.error(std::string(key) + " is " + it->type_name() + ", not a string");
  }
  return std::optional<std::string>(it->get<std::string>());
}

Result<std::string> req_string(const json& obj, const char* key, const Where& w) {
  STRATA_ASSIGN_OR_RETURN(auto v, opt_string(obj, key, w));
  if (!v) return w.error(std::string(key) + " is missing");
  return std::move(*v);
}

std::string strip(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

// Tags as RabbitMQ's tag_list_from/1 reads them: an array of names (3.10
// writes this), or one string of comma-separated names (older exports, the
// management UI's form); names are stripped and empty ones dropped. A
// record without tags but with the 2.x "administrator" flag gets
// [administrator] or []; one with neither is refused, as RabbitMQ refuses
// it (tags_not_present).
Result<std::vector<std::string>> parse_tags(const json& u, const Where& w) {
  std::vector<std::string> tags;
  auto it = u.find("tags");
  if (it == u.end() || it->is_null()) {
    auto admin = u.find("administrator");
    if (admin == u.end()) return w.error("tags is missing");
    bool yes = admin->is_boolean() ? admin->get<bool>()
                                   : (admin->is_string() && admin->get<std::string>() == "true");
    if (yes) tags.push_back("administrator");
    return tags;
  }
  auto add = [&tags](std::string_view t) {
    std::string s = strip(t);
    if (!s.empty()) tags.push_back(std::move(s));
  };
  if (it->is_string()) {
    const std::string& all = it->get_ref<const std::string&>();
    size_t start = 0;
    while (start <= all.size()) {
      size_t comma = all.find(',', start);
      if (comma == std::string::npos) comma = all.size();
      add(std::string_view(all).substr(start, comma - start));
      start = comma + 1;
    }
    return tags;
  }
  if (it->is_array()) {
    for (size_t i = 0; i < it->size(); ++i) {
      if (!(*it)[i].is_string()) {
        return w.error("tags[" + std::to_string(i) + "] is " + (*it)[i].type_name() +
                       ", not a string");
      }
      add((*it)[i].get_ref<const std::string&>());
    }
    return tags;
  }
  return w.error(std::string("tags is ") + it->type_name() +
                 ", not a string or an array of strings");
}

// RabbitMQ's hashing_algorithm/2 (rabbit_auth_backend_internal) for a user
// record without one: files of 3.0-3.5 hashed with MD5; any later one with
// the server's default, SHA-256.
HashAlgorithm default_algorithm(std::string_view rabbit_version) {
  for (std::string_view old : {"3.0.", "3.1.", "3.2.", "3.3.", "3.4.", "3.5."}) {
    if (rabbit_version.starts_with(old)) return HashAlgorithm::md5;
  }
  return HashAlgorithm::sha256;
}

// One limit of a "limits" object: nullopt when absent or negative (RabbitMQ's
// "no limit"), an error when not an integer or too large.
Result<std::optional<uint32_t>> parse_limit(const json& limits, const char* key, const Where& w) {
  auto it = limits.find(key);
  if (it == limits.end() || it->is_null()) return std::optional<uint32_t>();
  if (!it->is_number_integer()) {
    return w.error(std::string("limits.") + key + " is " + it->type_name() + ", not an integer");
  }
  const int64_t n = it->get<int64_t>();
  if (n < 0) return std::optional<uint32_t>();
  if (n > int64_t(UINT32_MAX)) return w.error(std::string("limits.") + key + " is too large");
  return std::optional<uint32_t>(uint32_t(n));
}

// The "limits" member as an object ({} when absent, or RabbitMQ 3.10's
// empty list for a vhost without limits).
Result<json> limits_of(const json& entry, const Where& w) {
  auto it = entry.find("limits");
  if (it == entry.end() || it->is_null() || (it->is_array() && it->empty())) {
    return json::object();
  }
  if (!it->is_object())
    return w.error(std::string("limits is ") + it->type_name() + ", not an object");
  return *it;
}

// RabbitMQ's vhost limits, kept as the runtime parameter
// {"component": "vhost-limits", "vhost": V, "name": "limits", "value": {...}}.
Status apply_vhost_limits(const json& value, const Where& w, VHost* v) {
  if (!value.is_object()) return w.error("value is not an object");
  STRATA_ASSIGN_OR_RETURN(v->max_connections, parse_limit(value, "max-connections", w));
  STRATA_ASSIGN_OR_RETURN(v->max_queues, parse_limit(value, "max-queues", w));
  return Status::OK();
}

Result<User> parse_user(const json& u, const Where& w0, std::string_view rabbit_version) {
  Where w = w0;
  if (!u.is_object()) return w.error(std::string("is ") + u.type_name() + ", not an object");
  STRATA_ASSIGN_OR_RETURN(std::string name, req_string(u, "name", w));
  if (name.empty()) return w.error("name is empty");
  w.name = name;
  User user;
  user.name = std::move(name);
  STRATA_ASSIGN_OR_RETURN(auto alg_name, opt_string(u, "hashing_algorithm", w));
  if (alg_name) {
    auto alg = parse_hash_algorithm(*alg_name);
    if (!alg.ok()) return w.error("hashing_algorithm: " + alg.error().message);
    user.algorithm = *alg;
  } else {
    user.algorithm = default_algorithm(rabbit_version);
  }
  STRATA_ASSIGN_OR_RETURN(auto hash, opt_string(u, "password_hash", w));
  STRATA_ASSIGN_OR_RETURN(auto password, opt_string(u, "password", w));
  if (hash && password) return w.error("both password and password_hash are given");
  if (password && !password->empty()) {
    auto h = hash_password_random(*password, user.algorithm);
    if (!h.ok()) return w.error("password: " + h.error().message);
    user.password_hash = std::move(h).value();
  } else if (hash && !hash->empty()) {
    auto st = check_stored_hash(*hash, user.algorithm);
    if (!st.ok()) return w.error("password_hash: " + st.error().message);
    user.password_hash = std::move(*hash);
  }
  STRATA_ASSIGN_OR_RETURN(user.tags, parse_tags(u, w));
  STRATA_ASSIGN_OR_RETURN(json limits, limits_of(u, w));
  STRATA_ASSIGN_OR_RETURN(user.max_connections, parse_limit(limits, "max-connections", w));
  return user;
}

Result<VHost> parse_vhost(const json& v, const Where& w0) {
  Where w = w0;
  if (!v.is_object()) return w.error(std::string("is ") + v.type_name() + ", not an object");
  STRATA_ASSIGN_OR_RETURN(std::string name, req_string(v, "name", w));
  if (name.empty()) return w.error("name is empty");
  w.name = name;
  VHost vhost;
  vhost.name = std::move(name);
  // rabbit_definitions:add_vhost/2 takes a top-level "description" (the
  // management API's form) before metadata.description (what 3.10 exports).
  STRATA_ASSIGN_OR_RETURN(auto desc, opt_string(v, "description", w));
  if (!desc) {
    auto md = v.find("metadata");
    if (md != v.end() && md->is_object()) {
      STRATA_ASSIGN_OR_RETURN(desc, opt_string(*md, "description", w));
    }
  }
  vhost.description = desc.value_or("");
  // strata's configuration may give a vhost's limits on the entry itself;
  // a definitions file has them under "parameters" (parse_definitions).
  STRATA_ASSIGN_OR_RETURN(json limits, limits_of(v, w));
  STRATA_TRY(apply_vhost_limits(limits, w, &vhost));
  return vhost;
}

Result<UserPermission> parse_permission(const json& p, const Where& w0) {
  Where w = w0;
  if (!p.is_object()) return w.error(std::string("is ") + p.type_name() + ", not an object");
  UserPermission perm;
  STRATA_ASSIGN_OR_RETURN(perm.user, req_string(p, "user", w));
  STRATA_ASSIGN_OR_RETURN(perm.vhost, req_string(p, "vhost", w));
  w.name = "user " + perm.user + ", vhost " + perm.vhost;
  STRATA_ASSIGN_OR_RETURN(perm.configure, req_string(p, "configure", w));
  STRATA_ASSIGN_OR_RETURN(perm.write, req_string(p, "write", w));
  STRATA_ASSIGN_OR_RETURN(perm.read, req_string(p, "read", w));
  return perm;
}

// A queue is a stream when its x-queue-type argument says so (how it was
// declared) or, failing that, its "type" does (what 3.10 exports beside).
Status parse_queue(const json& q, const Where& w0, Definitions& out) {
  Where w = w0;
  if (!q.is_object()) return w.error(std::string("is ") + q.type_name() + ", not an object");
  STRATA_ASSIGN_OR_RETURN(std::string name, req_string(q, "name", w));
  w.name = name;
  STRATA_ASSIGN_OR_RETURN(std::string vhost, req_string(q, "vhost", w));
  json arguments = json::object();
  auto args = q.find("arguments");
  if (args != q.end() && !args->is_null()) {
    if (!args->is_object()) {
      return w.error(std::string("arguments is ") + args->type_name() + ", not an object");
    }
    arguments = *args;
  }
  std::optional<std::string> type;
  auto xqt = arguments.find("x-queue-type");
  if (xqt != arguments.end()) {
    if (!xqt->is_string()) {
      return w.error(std::string("arguments.x-queue-type is ") + xqt->type_name() +
                     ", not a string");
    }
    type = xqt->get<std::string>();
  } else {
    STRATA_ASSIGN_OR_RETURN(type, opt_string(q, "type", w));
  }
  if (type == "stream") {
    out.streams.push_back(
        StreamDefinition{std::move(name), std::move(vhost), std::move(arguments)});
  } else {
    out.skipped_queues.push_back(
        SkippedQueue{std::move(name), std::move(vhost), type.value_or("classic")});
  }
  return Status::OK();
}

// The section's array: empty when absent or null, an error when another type.
Result<const json*> section(const json& doc, std::string_view source, const char* key) {
  static const json empty = json::array();
  auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return &empty;
  if (!it->is_array()) {
    return Error(Errc::invalid_argument,
                 std::string(source) + ": " + key + " is " + it->type_name() + ", not an array");
  }
  return &*it;
}

}  // namespace

Result<Definitions> parse_definitions(std::string_view text, std::string_view source_name) {
  json doc;
  // nlohmann's parse error names the byte offset; the exception stays here.
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    return Error(Errc::invalid_argument,
                 std::string(source_name) + ": not valid JSON: " + e.what());
  }
  if (!doc.is_object()) {
    return Error(Errc::invalid_argument, std::string(source_name) + ": the top level is " +
                                             doc.type_name() + ", not an object");
  }
  Definitions defs;
  auto version = doc.find("rabbit_version");
  if (version != doc.end() && version->is_string())
    defs.rabbit_version = version->get<std::string>();

  STRATA_ASSIGN_OR_RETURN(const json* users, section(doc, source_name, "users"));
  for (size_t i = 0; i < users->size(); ++i) {
    STRATA_ASSIGN_OR_RETURN(
        User u, parse_user((*users)[i], Where{source_name, "users", i, {}}, defs.rabbit_version));
    defs.users.push_back(std::move(u));
  }
  STRATA_ASSIGN_OR_RETURN(const json* vhosts, section(doc, source_name, "vhosts"));
  for (size_t i = 0; i < vhosts->size(); ++i) {
    STRATA_ASSIGN_OR_RETURN(VHost v,
                            parse_vhost((*vhosts)[i], Where{source_name, "vhosts", i, {}}));
    defs.vhosts.push_back(std::move(v));
  }
  STRATA_ASSIGN_OR_RETURN(const json* perms, section(doc, source_name, "permissions"));
  for (size_t i = 0; i < perms->size(); ++i) {
    STRATA_ASSIGN_OR_RETURN(
        UserPermission p, parse_permission((*perms)[i], Where{source_name, "permissions", i, {}}));
    defs.permissions.push_back(std::move(p));
  }
  STRATA_ASSIGN_OR_RETURN(const json* params, section(doc, source_name, "parameters"));
  for (size_t i = 0; i < params->size(); ++i) {
    const json& p = (*params)[i];
    Where w{source_name, "parameters", i, {}};
    if (!p.is_object() || p.value("component", "") != "vhost-limits") continue;
    STRATA_ASSIGN_OR_RETURN(std::string vhost, req_string(p, "vhost", w));
    w.name = vhost;
    auto v = std::find_if(defs.vhosts.begin(), defs.vhosts.end(),
                          [&](const VHost& x) { return x.name == vhost; });
    if (v == defs.vhosts.end()) return w.error("vhost-limits of a vhost the file does not define");
    STRATA_TRY(apply_vhost_limits(p.value("value", json()), w, &*v));
  }
  STRATA_ASSIGN_OR_RETURN(const json* queues, section(doc, source_name, "queues"));
  for (size_t i = 0; i < queues->size(); ++i) {
    STRATA_TRY(parse_queue((*queues)[i], Where{source_name, "queues", i, {}}, defs));
  }
  return defs;
}

Status apply_vhost_limits_value(const json& value, std::string_view source_name, size_t index,
                                VHost* vhost) {
  return apply_vhost_limits(value, Where{source_name, "parameters", index, vhost->name}, vhost);
}

std::string export_definitions(const Definitions& defs) {
  json users = json::array();
  for (const User& u : defs.users) {
    users.push_back({{"name", u.name},
                     {"password_hash", u.password_hash},
                     {"hashing_algorithm", hash_algorithm_name(u.algorithm)},
                     {"tags", u.tags},
                     {"limits", u.max_connections ? json{{"max-connections", *u.max_connections}}
                                                  : json::object()}});
  }
  json params = json::array();
  json vhosts = json::array();
  for (const VHost& v : defs.vhosts) {
    vhosts.push_back({{"name", v.name},
                      {"limits", json::array()},
                      {"metadata", {{"description", v.description}, {"tags", json::array()}}}});
    // As RabbitMQ exports them: a runtime parameter of the vhost.
    json value = json::object();
    if (v.max_connections) value["max-connections"] = *v.max_connections;
    if (v.max_queues) value["max-queues"] = *v.max_queues;
    if (!value.empty()) {
      params.push_back(
          {{"component", "vhost-limits"}, {"vhost", v.name}, {"name", "limits"}, {"value", value}});
    }
  }
  json perms = json::array();
  for (const UserPermission& p : defs.permissions) {
    perms.push_back({{"user", p.user},
                     {"vhost", p.vhost},
                     {"configure", p.configure},
                     {"write", p.write},
                     {"read", p.read}});
  }
  json queues = json::array();
  for (const StreamDefinition& s : defs.streams) {
    json args = s.arguments.is_object() ? s.arguments : json::object();
    // The argument marks the queue a stream for any reader of the file,
    // including RabbitMQ's import, which declares from arguments.
    args["x-queue-type"] = "stream";
    queues.push_back({{"name", s.name},
                      {"vhost", s.vhost},
                      {"type", "stream"},
                      {"durable", true},
                      {"auto_delete", false},
                      {"arguments", std::move(args)}});
  }
  json doc = json::object();
  if (!defs.rabbit_version.empty()) {
    doc["rabbit_version"] = defs.rabbit_version;
    doc["rabbitmq_version"] = defs.rabbit_version;
  }
  doc["users"] = std::move(users);
  doc["vhosts"] = std::move(vhosts);
  doc["permissions"] = std::move(perms);
  doc["queues"] = std::move(queues);
  doc["parameters"] = std::move(params);
  // The sections strata does not model, empty, so the file has the shape
  // RabbitMQ's own export has.
  for (const char* key :
       {"topic_permissions", "global_parameters", "policies", "exchanges", "bindings"}) {
    doc[key] = json::array();
  }
  // replace: a name that is not UTF-8 (it cannot come from a parsed file,
  // only from code) is written with U+FFFD rather than throwing.
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<std::shared_ptr<const AccessControl>> build_access_control(
    const Definitions& defs, std::vector<std::string> loopback_users) {
  return AccessControl::build(defs.users, defs.vhosts, defs.permissions, std::move(loopback_users));
}

}  // namespace strata::auth
