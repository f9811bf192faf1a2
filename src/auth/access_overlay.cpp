#include "auth/access_overlay.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "auth/definitions.h"

namespace strata::auth {

using json = nlohmann::json;

namespace {

bool same_place(const UserPermission& p, std::string_view user, std::string_view vhost) {
  return p.user == user && p.vhost == vhost;
}

template <typename T>
bool contains(const std::vector<T>& v, const T& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Replaces the entry `same` finds, or appends.
template <typename T, typename Same>
void upsert(std::vector<T>* v, T item, Same same) {
  auto it = std::find_if(v->begin(), v->end(), same);
  if (it != v->end()) {
    *it = std::move(item);
  } else {
    v->push_back(std::move(item));
  }
}

}  // namespace

void overlay_put_user(AccessOverlay* o, User user) {
  const std::string name = user.name;
  upsert(&o->users, std::move(user), [&](const User& u) { return u.name == name; });
}

void overlay_delete_user(AccessOverlay* o, std::string_view name) {
  std::erase_if(o->users, [&](const User& u) { return u.name == name; });
  std::erase_if(o->permissions, [&](const UserPermission& p) { return p.user == name; });
  // The user's own clearings mean nothing once all of its base permissions
  // are gone with it.
  std::erase_if(o->cleared_permissions, [&](const auto& c) { return c.first == name; });
  if (!contains(o->deleted_users, std::string(name))) o->deleted_users.emplace_back(name);
}

void overlay_set_permission(AccessOverlay* o, UserPermission p) {
  const std::string user = p.user, vhost = p.vhost;
  upsert(&o->permissions, std::move(p),
         [&](const UserPermission& q) { return same_place(q, user, vhost); });
}

void overlay_clear_permission(AccessOverlay* o, std::string_view user, std::string_view vhost) {
  std::erase_if(o->permissions,
                [&](const UserPermission& p) { return same_place(p, user, vhost); });
  std::pair<std::string, std::string> key{std::string(user), std::string(vhost)};
  if (!contains(o->cleared_permissions, key)) o->cleared_permissions.push_back(std::move(key));
}

void overlay_put_vhost(AccessOverlay* o, VHost vhost) {
  const std::string name = vhost.name;
  upsert(&o->vhosts, std::move(vhost), [&](const VHost& v) { return v.name == name; });
}

void overlay_delete_vhost(AccessOverlay* o, std::string_view name) {
  std::erase_if(o->vhosts, [&](const VHost& v) { return v.name == name; });
  std::erase_if(o->permissions, [&](const UserPermission& p) { return p.vhost == name; });
  std::erase_if(o->cleared_permissions, [&](const auto& c) { return c.second == name; });
  if (!contains(o->deleted_vhosts, std::string(name))) o->deleted_vhosts.emplace_back(name);
}

Result<std::shared_ptr<const AccessControl>> apply_overlay(const AccessControl& base,
                                                           const AccessOverlay& overlay,
                                                           std::vector<std::string>* ignored) {
  auto deleted = [&](std::string_view name) {
    return contains(overlay.deleted_users, std::string(name));
  };
  auto redefined = [&](std::string_view name) {
    return std::any_of(overlay.users.begin(), overlay.users.end(),
                       [&](const User& u) { return u.name == name; });
  };
  std::vector<User> users;
  for (const User& u : base.users()) {
    if (!deleted(u.name) && !redefined(u.name)) users.push_back(u);
  }
  users.insert(users.end(), overlay.users.begin(), overlay.users.end());

  auto vhost_deleted = [&](std::string_view name) {
    return contains(overlay.deleted_vhosts, std::string(name));
  };
  std::vector<VHost> vhosts;
  for (const VHost& v : base.vhosts()) {
    const bool redone = std::any_of(overlay.vhosts.begin(), overlay.vhosts.end(),
                                    [&](const VHost& w) { return w.name == v.name; });
    if (!vhost_deleted(v.name) && !redone) vhosts.push_back(v);
  }
  vhosts.insert(vhosts.end(), overlay.vhosts.begin(), overlay.vhosts.end());
  auto vhost_known = [&](std::string_view name) {
    return std::any_of(vhosts.begin(), vhosts.end(),
                       [&](const VHost& v) { return v.name == name; });
  };

  std::vector<UserPermission> perms;
  for (const UserPermission& p : base.permissions()) {
    if (deleted(p.user) || vhost_deleted(p.vhost)) continue;
    if (contains(overlay.cleared_permissions, std::pair{p.user, p.vhost})) continue;
    bool replaced =
        std::any_of(overlay.permissions.begin(), overlay.permissions.end(),
                    [&](const UserPermission& q) { return same_place(q, p.user, p.vhost); });
    if (!replaced) perms.push_back(p);
  }
  for (const UserPermission& p : overlay.permissions) {
    const bool user_known =
        std::any_of(users.begin(), users.end(), [&](const User& u) { return u.name == p.user; });
    if (user_known && vhost_known(p.vhost)) {
      perms.push_back(p);
    } else if (ignored) {
      ignored->push_back("permissions of user '" + p.user + "' in vhost '" + p.vhost +
                         "': no such " + (user_known ? "vhost" : "user"));
    }
  }
  return AccessControl::build(std::move(users), std::move(vhosts), std::move(perms),
                              base.loopback_users());
}

std::string encode_overlay(const AccessOverlay& o) {
  Definitions d;
  d.users = o.users;
  d.permissions = o.permissions;
  d.vhosts = o.vhosts;
  json doc = json::parse(export_definitions(d));
  json out = json::object();
  out["users"] = std::move(doc["users"]);
  out["permissions"] = std::move(doc["permissions"]);
  out["vhosts"] = std::move(doc["vhosts"]);
  // The vhosts' limits, as RabbitMQ keeps them (vhost-limits parameters).
  out["parameters"] = std::move(doc["parameters"]);
  out["deleted_vhosts"] = o.deleted_vhosts;
  out["deleted_users"] = o.deleted_users;
  json cleared = json::array();
  for (const auto& [user, vhost] : o.cleared_permissions) {
    cleared.push_back({{"user", user}, {"vhost", vhost}});
  }
  out["cleared_permissions"] = std::move(cleared);
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<AccessOverlay> decode_overlay(std::string_view text, std::string_view source) {
  STRATA_ASSIGN_OR_RETURN(Definitions d, parse_definitions(text, source));
  AccessOverlay o;
  o.users = std::move(d.users);
  o.permissions = std::move(d.permissions);
  o.vhosts = std::move(d.vhosts);
  // parse_definitions has checked that the text is a JSON object.
  const json doc = json::parse(text);
  auto bad = [&](const std::string& what) {
    return Error(Errc::invalid_argument, std::string(source) + ": " + what);
  };
  if (auto it = doc.find("deleted_users"); it != doc.end()) {
    if (!it->is_array()) return bad("deleted_users is not an array");
    for (size_t i = 0; i < it->size(); ++i) {
      const json& n = (*it)[i];
      if (!n.is_string()) return bad("deleted_users[" + std::to_string(i) + "] is not a string");
      o.deleted_users.push_back(n.get<std::string>());
    }
  }
  if (auto it = doc.find("deleted_vhosts"); it != doc.end()) {
    if (!it->is_array()) return bad("deleted_vhosts is not an array");
    for (size_t i = 0; i < it->size(); ++i) {
      const json& n = (*it)[i];
      if (!n.is_string()) return bad("deleted_vhosts[" + std::to_string(i) + "] is not a string");
      o.deleted_vhosts.push_back(n.get<std::string>());
    }
  }
  if (auto it = doc.find("cleared_permissions"); it != doc.end()) {
    if (!it->is_array()) return bad("cleared_permissions is not an array");
    for (size_t i = 0; i < it->size(); ++i) {
      const json& c = (*it)[i];
      auto u = c.is_object() ? c.find("user") : c.end();
      auto v = c.is_object() ? c.find("vhost") : c.end();
      if (!c.is_object() || u == c.end() || v == c.end() || !u->is_string() || !v->is_string()) {
        return bad("cleared_permissions[" + std::to_string(i) +
                   "] is not an object with strings user and vhost");
      }
      o.cleared_permissions.emplace_back(u->get<std::string>(), v->get<std::string>());
    }
  }
  return o;
}

}  // namespace strata::auth
