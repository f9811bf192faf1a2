#include "server/serve_users.h"

#include <fmt/format.h>

#include <set>

#include "auth/definitions.h"
#include "common/assert.h"
#include "common/secret_file.h"

namespace strata::server {
namespace {

using json = nlohmann::json;

Error bad_setting(const std::string& path, const std::string& why) {
  return Error(Errc::invalid_argument, fmt::format("serve config: {}: {}", path, why));
}

}  // namespace

Result<std::string> read_secret_file(const std::string& setting, const std::string& path) {
  auto s = strata::read_secret_file(path);
  if (!s.ok()) return bad_setting(setting, s.error().message);
  return s;
}

namespace {

// The configuration's users in the definitions' shape: a password file
// read into "password", tags optional. Unknown keys are refused here (a
// typo must not leave a user without the password it was meant to have);
// the definitions reader then checks the rest.
Result<json> config_users(const json& users, PeerLogin* peer) {
  if (!users.is_array() || users.empty()) return bad_setting("users", "not a non-empty array");
  static const std::set<std::string> known = {
      "name", "password", "password_hash", "password_file", "hashing_algorithm", "tags", "limits"};
  json out = json::array();
  for (size_t i = 0; i < users.size(); ++i) {
    const std::string path = fmt::format("users[{}]", i);
    json u = users[i];
    if (!u.is_object()) return bad_setting(path, "not an object");
    for (const auto& [k, v] : u.items()) {
      if (!known.contains(k)) return bad_setting(path + "." + k, "unknown setting");
    }
    const int given = int(u.contains("password")) + int(u.contains("password_hash")) +
                      int(u.contains("password_file"));
    if (given != 1) {
      return bad_setting(path, "give exactly one of password, password_hash and password_file");
    }
    if (u.contains("password_file")) {
      if (!u["password_file"].is_string())
        return bad_setting(path + ".password_file", "not a string");
      STRATA_ASSIGN_OR_RETURN(std::string pw,
                              read_secret_file(path + ".password_file", u["password_file"]));
      u.erase("password_file");
      u["password"] = std::move(pw);
    }
    if (u.contains("password")) {
      if (!u["password"].is_string() || u["password"].get<std::string>().empty()) {
        return bad_setting(path + ".password", "not a non-empty string");
      }
      if (peer->user.empty() && u.contains("name") && u["name"].is_string()) {
        *peer = {u["name"].get<std::string>(), u["password"].get<std::string>()};
      }
    }
    if (!u.contains("tags")) u["tags"] = json::array();
    out.push_back(std::move(u));
  }
  return out;
}

Result<UserSettings> build(const json& defs_doc, PeerLogin peer, std::vector<std::string> loopback,
                           const std::string& source) {
  STRATA_ASSIGN_OR_RETURN(auto defs, auth::parse_definitions(defs_doc.dump(), source));
  // Queues in a definitions file (streams among them) are not read here:
  // streams are created by clients and by `strata stream create`.
  STRATA_ASSIGN_OR_RETURN(auto access, auth::build_access_control(defs, std::move(loopback)));
  return UserSettings{std::move(access), std::move(peer)};
}

}  // namespace

Result<UserSettings> load_user_settings(json* document) {
  auto take = [&](const char* key) {
    json v;
    if (auto it = document->find(key); it != document->end()) {
      v = std::move(*it);
      document->erase(key);
    }
    return v;
  };
  json users = take("users");
  json vhosts = take("vhosts");
  json permissions = take("permissions");
  json loopback_doc = take("loopback_users");
  json definitions_file = take("definitions_file");

  std::vector<std::string> loopback = auth::kDefaultLoopbackUsers;
  if (!loopback_doc.is_null()) {
    if (!loopback_doc.is_array())
      return bad_setting("loopback_users", "not an array of user names");
    loopback.clear();
    for (const auto& n : loopback_doc) {
      if (!n.is_string()) return bad_setting("loopback_users", "not an array of user names");
      loopback.push_back(n.get<std::string>());
    }
  }

  if (!definitions_file.is_null()) {
    if (!users.is_null() || !vhosts.is_null() || !permissions.is_null()) {
      return bad_setting("definitions_file",
                         "give either a definitions file or users/vhosts/permissions");
    }
    if (!definitions_file.is_string() || definitions_file.get<std::string>().empty()) {
      return bad_setting("definitions_file", "not a file name");
    }
    const std::string path = definitions_file.get<std::string>();
    auto doc = read_json_config_file(path);
    if (!doc.ok()) return bad_setting("definitions_file", doc.error().message);
    // A definitions file holds hashes only: no node login among them.
    return build(*doc, PeerLogin{}, std::move(loopback), path);
  }
  PeerLogin peer;
  json doc = json::object();
  if (users.is_null()) {
    users = json::array({{{"name", "guest"}, {"password", "guest"}, {"tags", {"administrator"}}}});
  }
  STRATA_ASSIGN_OR_RETURN(doc["users"], config_users(users, &peer));
  if (vhosts.is_null()) vhosts = json::array({{{"name", "/"}}});
  if (!vhosts.is_array()) return bad_setting("vhosts", "not an array of {\"name\": ...}");
  doc["vhosts"] = std::move(vhosts);
  if (permissions.is_null()) {
    // As before permissions existed: every user everything in "/".
    permissions = json::array();
    for (const auto& u : doc["users"]) {
      permissions.push_back({{"user", u.value("name", "")},
                             {"vhost", "/"},
                             {"configure", ".*"},
                             {"write", ".*"},
                             {"read", ".*"}});
    }
  }
  if (!permissions.is_array()) return bad_setting("permissions", "not an array");
  doc["permissions"] = std::move(permissions);
  return build(doc, std::move(peer), std::move(loopback), "serve config");
}

// Built once: every ServerSettings starts from it, and hashing guest's
// password for each would be work for nothing.
const UserSettings& default_user_settings() {
  static const UserSettings d = [] {
    json none = json::object();
    auto s = load_user_settings(&none);
    STRATA_ASSERT(s.ok(), "the default users do not build");
    return std::move(s).value();
  }();
  return d;
}

void user_settings_read(SettingsRead* out) {
  for (const char* k : {"users", "vhosts", "permissions", "loopback_users", "definitions_file"}) {
    out->insert(k);
  }
}

}  // namespace strata::server
