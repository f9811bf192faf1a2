#include "server/management_api.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "auth/base64.h"
#include "auth/definitions.h"
#include "common/stream_name.h"
#include "server/definitions_streams.h"
#include "server/management_cluster.h"
#include "server/management_queues.h"
#include "server/management_streams.h"

namespace strata::server {

using json = nlohmann::json;

namespace {

std::optional<std::pair<std::string, std::string>> basic_credentials(const std::string& header) {
  constexpr std::string_view kBasic = "Basic ";
  if (header.size() <= kBasic.size() || header.compare(0, kBasic.size(), kBasic) != 0) {
    return std::nullopt;
  }
  auto raw = auth::base64_decode(std::string_view(header).substr(kBasic.size()));
  if (!raw.ok()) return std::nullopt;
  std::string text(raw->begin(), raw->end());
  auto colon = text.find(':');
  if (colon == std::string::npos) return std::nullopt;
  return std::pair{text.substr(0, colon), text.substr(colon + 1)};
}

json user_json(const auth::User& u) {
  return {{"name", u.name},
          {"password_hash", u.password_hash},
          {"hashing_algorithm", auth::hash_algorithm_name(u.algorithm)},
          {"tags", u.tags}};
}

json permission_json(const auth::UserPermission& p) {
  return {{"user", p.user},
          {"vhost", p.vhost},
          {"configure", p.configure},
          {"write", p.write},
          {"read", p.read}};
}

// "/api/a/b/c" -> {"a", "b", "c"}. The vhost "/" arrives decoded as an
// empty segment between two slashes ("/api/permissions///guest"); it is
// the one vhost name with a slash strata can have, so an empty segment in
// a vhost position reads as "/".
std::vector<std::string> segments(std::string_view path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size() && path[i] == '/') ++i;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    out.emplace_back(path.substr(i, j - i));
    if (j == path.size()) break;
    i = j + 1;
  }
  return out;
}

// /api/permissions/VHOST/USER with VHOST "/" decoded: "permissions", "",
// "", "USER". Folds the two empty segments of "/" back into one "/".
// The same for /api/vhosts/VHOST and /api/vhost-limits/VHOST[/LIMIT].
std::vector<std::string> fold_root_vhost(std::vector<std::string> s) {
  if (s.size() == 5 && s[1] == "permissions" && s[2].empty() && s[3].empty()) {
    return {s[0], s[1], "/", s[4]};
  }
  const bool vhost_second =
      s.size() >= 4 && (s[1] == "vhosts" || s[1] == "vhost-limits" || s[1] == "definitions");
  if (vhost_second && s.size() == 4 && s[2].empty() && s[3].empty()) return {s[0], s[1], "/"};
  if (vhost_second && s.size() == 5 && s[2].empty() && s[3].empty()) {
    return {s[0], s[1], "/", s[4]};
  }
  return s;
}

// `entry` read as the one entry of a definitions section, with the
// checks RabbitMQ's import makes of it.
Result<auth::Definitions> as_definitions_entry(const char* section, json entry) {
  json doc = {{section, json::array({std::move(entry)})}};
  return auth::parse_definitions(doc.dump(), "request body");
}

Result<auth::User> user_from_body(const std::string& name, const std::string& body) {
  STRATA_ASSIGN_OR_RETURN(json b, body_object(body));
  b["name"] = name;
  // RabbitMQ's PUT /api/users takes a user without tags as one with none.
  if (!b.contains("tags")) b["tags"] = json::array();
  STRATA_ASSIGN_OR_RETURN(auth::Definitions d, as_definitions_entry("users", std::move(b)));
  return std::move(d.users.front());
}

Result<auth::UserPermission> permission_from_body(const std::string& vhost, const std::string& user,
                                                  const std::string& body) {
  STRATA_ASSIGN_OR_RETURN(json b, body_object(body));
  b["user"] = user;
  b["vhost"] = vhost;
  STRATA_ASSIGN_OR_RETURN(auth::Definitions d, as_definitions_entry("permissions", std::move(b)));
  return std::move(d.permissions.front());
}

class Api {
 public:
  Api(AccessAdmin& admin, ApiCounters& counters, const ApiNode& node, const ApiRequest& r)
      : admin_(admin), counters_(counters), node_(node), r_(r), now_(admin.current()) {}

  ApiReply run() {
    auto creds = basic_credentials(r_.authorization);
    if (!creds) return unauthorized("credentials required (HTTP Basic)");
    if (now_->authenticate_plain(creds->first, creds->second, r_.loopback) !=
        auth::AuthOutcome::ok) {
      counters_.auth_failures += 1;
      spdlog::info("http: {} {}: login refused for user '{}'", r_.method, r_.path, creds->first);
      return unauthorized("login refused");
    }
    caller_ = creds->first;
    auto s = fold_root_vhost(segments(r_.path));
    if (s.size() < 2 || s[0] != "api") return error_reply(404, "not_found", "no such resource");
    if (s[1] == "whoami" && s.size() == 2 && r_.method == "GET") {
      return reply(200, {{"name", caller_}, {"tags", now_->find_user(caller_)->tags}});
    }
    const bool monitor =
        now_->has_tag(caller_, "administrator") || now_->has_tag(caller_, "monitoring");
    if (s[1] == "stream" && s.size() == 3 && r_.method == "GET" && monitor) {
      return stream_lists(s[2]);
    }
    // The names a call gives are of ?vhost= ("/" when absent); below they
    // are stored names.
    const std::string vhost = r_.vhost_or_default();
    auto stored = [&](const std::string& name) {
      return name.empty() ? name : qualified_stream_name(vhost, name);
    };
    r_.stream = stored(r_.stream);
    // The rest of the path is the stream's name, slashes and all.
    constexpr std::string_view kStreams = "/api/streams/";
    const std::string stream_name =
        stored(r_.path.rfind(kStreams, 0) == 0 ? r_.path.substr(kStreams.size()) : "");
    if (s[1] == "streams" && r_.method == "GET" && monitor) {
      return streams_api(node_, r_, stream_name, caller_);
    }
    if (s[1] == "offsets" && s.size() == 2 && r_.method == "GET" && monitor) {
      return offsets_api(node_, r_, caller_);
    }
    constexpr std::string_view kSupers = "/api/super-streams/";
    const std::string super_name =
        r_.path.rfind(kSupers, 0) == 0 ? r_.path.substr(kSupers.size()) : "";
    // (super_streams_api qualifies the name and the partitions itself.)
    if (s[1] == "super-streams" && r_.method == "GET" && monitor) {
      return super_streams_api(node_, r_, super_name, caller_);
    }
    if (s[1] == "cluster" && s.size() == 2 && r_.method == "GET" && monitor) {
      return cluster_api(node_);
    }
    if (s[1] == "overview" && s.size() == 2 && r_.method == "GET" && monitor) {
      return overview_api(node_);
    }
    if (s[1] == "history" && s.size() == 2 && r_.method == "GET" && monitor) {
      return history();
    }
    if (s[1] == "connections" && s.size() == 2 && r_.method == "GET" && monitor) {
      return stream_lists("connections");
    }
    if (s[1] == "nodes" && s.size() == 2 && r_.method == "GET" && monitor) return nodes();
    const auto queue = s[1] == "queues" ? queue_path(r_.path) : std::nullopt;
    if (queue && r_.method == "GET" && monitor) return queues(*queue);
    if (!now_->has_tag(caller_, "administrator")) {
      return error_reply(403, "not_authorised",
                         fmt::format("user '{}' is not tagged administrator", caller_));
    }
    if (s[1] == "streams") return streams_api(node_, r_, stream_name, caller_);
    if (s[1] == "super-streams") return super_streams_api(node_, r_, super_name, caller_);
    if (s[1] == "offsets" && s.size() == 2) return offsets_api(node_, r_, caller_);
    if (r_.method == "DELETE" && s.size() == 3 && s[1] == "connections") {
      return close_connection_api(node_, s[2], caller_);
    }
    if (r_.method == "DELETE" && s.size() == 4 && s[1] == "stream" && s[2] == "connections") {
      return close_connection_api(node_, s[3], caller_);
    }
    if (queue) return queues(*queue);
    if (s[1] == "users") return users(s);
    if (s[1] == "permissions") return permissions(s);
    if (s[1] == "user-limits" || s[1] == "vhost-limits") return limits(s);
    if (s[1] == "vhosts" && s.size() == 2 && r_.method == "GET") return vhosts();
    if (s[1] == "vhosts" && s.size() == 3) return one_vhost(s[2]);
    if (s[1] == "definitions" && s.size() == 2 && r_.method == "GET") return definitions();
    if (s[1] == "definitions" && s.size() == 2 && r_.method == "POST") {
      return import_definitions(r_.body);
    }
    if (s[1] == "definitions" && s.size() == 3 && r_.method == "GET") {
      return vhost_definitions(s[2]);
    }
    if (s[1] == "definitions" && s.size() == 3 && r_.method == "POST") {
      return import_vhost_definitions(s[2]);
    }
    return error_reply(404, "not_found", "no such resource");
  }

 private:
  ApiReply unauthorized(std::string_view why) { return error_reply(401, "not_authorized", why); }
  ApiReply method_not_allowed() {
    return error_reply(405, "method_not_allowed", r_.method + " " + r_.path);
  }

  ApiReply changed(const Status& st, int ok_status, const std::string& what) {
    if (!st.ok()) return refused(st.error());
    counters_.changes += 1;
    spdlog::info("http: user '{}' {}", caller_, what);
    return ok_status == 204 ? no_content() : ApiReply{ok_status, ""};
  }

  ApiReply users(const std::vector<std::string>& s) {
    if (s.size() == 2) {
      if (r_.method != "GET") return method_not_allowed();
      json out = json::array();
      for (const auto& u : now_->users()) out.push_back(user_json(u));
      return reply(200, out);
    }
    const std::string& name = s[2];
    if (s.size() == 4 && s[3] == "permissions" && r_.method == "GET") {
      if (!now_->find_user(name)) return error_reply(404, "not_found", "no such user");
      json out = json::array();
      for (const auto& p : now_->permissions()) {
        if (p.user == name) out.push_back(permission_json(p));
      }
      return reply(200, out);
    }
    if (s.size() != 3 || name.empty()) return error_reply(404, "not_found", "no such resource");
    if (r_.method == "GET") {
      const auth::User* u = now_->find_user(name);
      if (!u) return error_reply(404, "not_found", "no such user");
      return reply(200, user_json(*u));
    }
    if (r_.method == "PUT") {
      auto user = user_from_body(name, r_.body);
      if (!user.ok()) return refused(user.error());
      const auth::User* had = now_->find_user(name);
      const bool existed = had != nullptr;
      // A new password or tags keep the user's limits, as RabbitMQ keeps
      // them apart from the user record; a body with "limits" sets them.
      if (had && !body_object(r_.body)->contains("limits")) {
        user->max_connections = had->max_connections;
      }
      Status st = admin_.edit([&](auth::AccessOverlay* o, const auth::AccessControl&) {
        overlay_put_user(o, *user);
        return Status::OK();
      });
      return changed(st, existed ? 204 : 201,
                     fmt::format("{} user '{}'", existed ? "changed" : "added", name));
    }
    if (r_.method == "DELETE") {
      Status st = admin_.edit([&](auth::AccessOverlay* o, const auth::AccessControl& now) {
        if (!now.find_user(name)) return Status(Error(Errc::not_found, "no such user"));
        overlay_delete_user(o, name);
        return Status::OK();
      });
      return changed(st, 204, fmt::format("deleted user '{}'", name));
    }
    return method_not_allowed();
  }

  // RabbitMQ's /api/user-limits and /api/vhost-limits: GET lists
  // [{"user"|"vhost": NAME, "value": {LIMIT: N}}] (of one NAME with a third
  // segment); PUT .../NAME/LIMIT {"value": N} sets one (negative: none, as
  // RabbitMQ's -1), DELETE .../NAME/LIMIT removes it. Users: max-connections;
  // vhosts: max-connections, max-queues. Kept in the overlay as the user's or
  // vhost's record with its limits.
  ApiReply limits(const std::vector<std::string>& s) {
    const bool users = s[1] == "user-limits";
    const char* who = users ? "user" : "vhost";
    auto value_of = [](std::optional<uint32_t> c, std::optional<uint32_t> q) {
      json v = json::object();
      if (c) v["max-connections"] = *c;
      if (q) v["max-queues"] = *q;
      return v;
    };
    if (r_.method == "GET" && (s.size() == 2 || s.size() == 3)) {
      json out = json::array();
      if (users) {
        for (const auto& u : now_->users()) {
          if (u.max_connections && (s.size() == 2 || s[2] == u.name)) {
            out.push_back({{"user", u.name}, {"value", value_of(u.max_connections, {})}});
          }
        }
      } else {
        for (const auto& v : now_->vhosts()) {
          json value = value_of(v.max_connections, v.max_queues);
          if (!value.empty() && (s.size() == 2 || s[2] == v.name)) {
            out.push_back({{"vhost", v.name}, {"value", std::move(value)}});
          }
        }
      }
      return reply(200, out);
    }
    if (s.size() != 4 || (r_.method != "PUT" && r_.method != "DELETE")) {
      return error_reply(404, "not_found", "no such resource");
    }
    const std::string& name = s[2];
    const std::string& limit = s[3];
    if (limit != "max-connections" && (users || limit != "max-queues")) {
      return error_reply(400, "bad_request",
                         fmt::format("no {} limit '{}' ({})", who, limit,
                                     users ? "max-connections" : "max-connections, max-queues"));
    }
    std::optional<uint32_t> value;
    if (r_.method == "PUT") {
      auto b = body_object(r_.body);
      if (!b.ok()) return refused(b.error());
      const json v = b->value("value", json());
      if (!v.is_number_integer()) {
        return error_reply(400, "bad_request", "the body must be {\"value\": N}, N an integer");
      }
      const int64_t n = v.get<int64_t>();
      if (n > int64_t(UINT32_MAX)) return error_reply(400, "bad_request", "the value is too large");
      if (n >= 0) value = uint32_t(n);
    }
    Status st = admin_.edit([&](auth::AccessOverlay* o, const auth::AccessControl& now) {
      if (users) {
        const auth::User* u = now.find_user(name);
        if (!u) return Status(Error(Errc::not_found, "no such user"));
        auth::User changed = *u;
        changed.max_connections = value;
        overlay_put_user(o, std::move(changed));
      } else {
        const auth::VHost* v = now.find_vhost(name);
        if (!v) return Status(Error(Errc::not_found, "no such vhost"));
        auth::VHost changed = *v;
        (limit == "max-queues" ? changed.max_queues : changed.max_connections) = value;
        overlay_put_vhost(o, std::move(changed));
      }
      return Status::OK();
    });
    return changed(
        st, 204,
        value ? fmt::format("set the {} limit {} of {} '{}' to {}", who, limit, who, name, *value)
              : fmt::format("removed the {} limit {} of {} '{}'", who, limit, who, name));
  }

  ApiReply permissions(const std::vector<std::string>& s) {
    if (s.size() == 2) {
      if (r_.method != "GET") return method_not_allowed();
      json out = json::array();
      for (const auto& p : now_->permissions()) out.push_back(permission_json(p));
      return reply(200, out);
    }
    if (s.size() != 4) return error_reply(404, "not_found", "no such resource");
    const std::string& vhost = s[2];
    const std::string& user = s[3];
    auto find = [&](const auth::AccessControl& a) -> const auth::UserPermission* {
      for (const auto& p : a.permissions()) {
        if (p.user == user && p.vhost == vhost) return &p;
      }
      return nullptr;
    };
    if (r_.method == "GET") {
      const auth::UserPermission* p = find(*now_);
      if (!p) return error_reply(404, "not_found", "no such permission entry");
      return reply(200, permission_json(*p));
    }
    if (r_.method == "PUT") {
      auto perm = permission_from_body(vhost, user, r_.body);
      if (!perm.ok()) return refused(perm.error());
      const bool existed = find(*now_) != nullptr;
      Status st = admin_.edit([&](auth::AccessOverlay* o, const auth::AccessControl& now) {
        if (!now.find_user(user)) {
          return Status(Error(Errc::invalid_argument, fmt::format("no user '{}'", user)));
        }
        if (!now.has_vhost(vhost)) {
          return Status(Error(Errc::invalid_argument, fmt::format("no vhost '{}'", vhost)));
        }
        overlay_set_permission(o, *perm);
        return Status::OK();
      });
      return changed(st, existed ? 204 : 201,
                     fmt::format("set permissions of '{}' in vhost '{}'", user, vhost));
    }
    if (r_.method == "DELETE") {
      Status st = admin_.edit([&](auth::AccessOverlay* o, const auth::AccessControl& now) {
        if (!find(now)) return Status(Error(Errc::not_found, "no such permission entry"));
        overlay_clear_permission(o, user, vhost);
        return Status::OK();
      });
      return changed(st, 204,
                     fmt::format("cleared permissions of '{}' in vhost '{}'", user, vhost));
    }
    return method_not_allowed();
  }

  ApiReply vhosts() {
    json out = json::array();
    for (const auto& v : now_->vhosts()) {
      out.push_back({{"name", v.name}, {"description", v.description}});
    }
    return reply(200, out);
  }

  // PUT creates a vhost (201) or changes its description (204); nobody has
  // permissions in a new vhost until they are set, as with rabbitmqctl.
  // DELETE takes the vhost, every permission in it and then every stream
  // and super stream of it, as RabbitMQ deletes a vhost's queues: its
  // connections are closed (12, recheck_access), and a Create they had
  // already asked for is refused or undone once the vhost is out of the
  // rules (StreamOps::create_stream). A DELETE of a vhost that is gone but
  // still has streams (a deletion that failed part way) deletes them.
  ApiReply one_vhost(const std::string& name) {
    if (r_.method == "GET") {
      for (const auto& v : now_->vhosts()) {
        if (v.name == name) return reply(200, {{"name", v.name}, {"description", v.description}});
      }
      return error_reply(404, "not_found", "no such vhost");
    }
    if (r_.method == "PUT") {
      auto b = body_object(r_.body.empty() ? "{}" : r_.body);
      if (!b.ok()) return refused(b.error());
      // A new description keeps the vhost's limits.
      const auth::VHost* had = now_->find_vhost(name);
      auth::VHost v = had ? *had : auth::VHost{name, ""};
      v.description = b->value("description", std::string());
      const bool existed = now_->has_vhost(name);
      Status st = admin_.edit([&](auth::AccessOverlay* o, const auth::AccessControl&) -> Status {
        STRATA_TRY(validate_vhost_name(name));
        overlay_put_vhost(o, v);
        return Status::OK();
      });
      return changed(st, existed ? 204 : 201,
                     fmt::format("{} vhost '{}'", existed ? "changed" : "added", name));
    }
    if (r_.method == "DELETE") {
      if (name == kDefaultVhost) {
        return error_reply(400, "bad_request",
                           "the vhost '/' cannot be deleted: it is where strata keeps streams "
                           "named without a vhost");
      }
      const bool existed = now_->has_vhost(name);
      if (existed) {
        Status st = admin_.edit([&](auth::AccessOverlay* o, const auth::AccessControl& now) {
          if (!now.has_vhost(name)) return Status(Error(Errc::not_found, "no such vhost"));
          overlay_delete_vhost(o, name);
          return Status::OK();
        });
        if (!st.ok()) return refused(st.error());
        counters_.changes += 1;
        spdlog::info("http: user '{}' deleted vhost '{}'", caller_, name);
      }
      return delete_vhost_streams(name, existed);
    }
    return method_not_allowed();
  }

  ApiReply delete_vhost_streams(const std::string& vhost, bool existed) {
    std::vector<std::string> failed;
    size_t deleted = 0;
    auto of_vhost = [&](const std::string& stored) {
      return split_stream_name(stored).vhost == vhost;
    };
    if (node_.super_streams && node_.delete_super_stream) {
      for (const auto& ss : node_.super_streams()) {
        if (!of_vhost(ss.name)) continue;
        Status st = node_.delete_super_stream(ss.name);
        if (st.ok() || st.code() == Errc::not_found) {
          deleted += 1;
        } else {
          failed.push_back(
              fmt::format("super stream {}: {}", printable_stream(ss.name), st.error().message));
        }
      }
    }
    if (node_.list && node_.remove) {
      auto all = node_.list();
      if (!all.ok()) failed.push_back("listing the streams: " + all.error().message);
      std::vector<std::string> names;
      if (all.ok()) {
        for (const auto& entry : *all) {
          if (of_vhost(entry.first)) names.push_back(entry.first);
        }
      }
      for (const std::string& stored : names) {
        Status st = node_.remove(stored);
        if (st.ok() || st.code() == Errc::not_found) {
          deleted += 1;
        } else {
          failed.push_back(
              fmt::format("stream {}: {}", printable_stream(stored), st.error().message));
        }
      }
    }
    if (deleted > 0) {
      spdlog::info("http: vhost '{}': deleted {} streams and super streams", vhost, deleted);
    }
    if (!failed.empty()) {
      spdlog::warn("http: vhost '{}': {} could not be deleted: {}", vhost, failed.size(),
                   fmt::join(failed, "; "));
      return error_reply(500, "internal_error",
                         fmt::format("vhost '{}' {}, but {} of its streams could not be deleted "
                                     "(DELETE it again to retry): {}",
                                     vhost, existed ? "is deleted" : "was gone", failed.size(),
                                     fmt::join(failed, "; ")));
    }
    if (!existed && deleted == 0) return error_reply(404, "not_found", "no such vhost");
    return no_content();
  }

  ApiReply definitions() {
    auth::Definitions d;
    d.users = now_->users();
    d.vhosts = now_->vhosts();
    d.permissions = now_->permissions();
    if (Status st = add_streams(&d, ""); !st.ok()) return refused(st.error());
    return ApiReply{200, auth::export_definitions(d)};
  }

  // The streams of `vhost` ("": every vhost) into `d`.
  Status add_streams(auth::Definitions* d, const std::string& vhost) {
    auto streams = node_.list();
    if (!streams.ok()) return std::move(streams).error();
    for (const auto& [stored, settings] : *streams) {
      const StreamPlace place = split_stream_name(stored);
      if (!vhost.empty() && place.vhost != vhost) continue;
      d->streams.push_back({std::string(place.name), std::string(place.vhost),
                            queue_arguments_from_settings(settings)});
    }
    return Status::OK();
  }

  // RabbitMQ's GET /api/definitions/VHOST: one vhost's queues (its
  // streams) and parameters (its limits) without users, vhosts, permissions
  // or the entries' "vhost", so the file imports into any vhost.
  ApiReply vhost_definitions(const std::string& vhost) {
    const auth::VHost* v = now_->find_vhost(vhost);
    if (v == nullptr) return error_reply(404, "not_found", fmt::format("no vhost '{}'", vhost));
    auth::Definitions d;
    d.vhosts.push_back(*v);
    if (Status st = add_streams(&d, vhost); !st.ok()) return refused(st.error());
    json doc = json::parse(auth::export_definitions(d));
    for (const char* section : {"users", "vhosts", "permissions", "topic_permissions"}) {
      doc.erase(section);
    }
    for (auto& q : doc["queues"]) q.erase("vhost");
    for (auto& p : doc["parameters"]) p.erase("vhost");
    return reply(200, doc);
  }

  // RabbitMQ's POST /api/definitions/VHOST: a file's queues go into
  // VHOST, whatever vhost they name, and so do its parameters (RabbitMQ's
  // add_parameter with the vhost replaced): strata's only ones, vhost-limits,
  // become VHOST's limits, the file's value replacing VHOST's as RabbitMQ's
  // parameter does. Its users, vhosts and permissions are not imported
  // (RabbitMQ ignores them there too).
  ApiReply import_vhost_definitions(const std::string& vhost) {
    if (!now_->has_vhost(vhost)) {
      return error_reply(404, "not_found", fmt::format("no vhost '{}'", vhost));
    }
    auto doc = body_object(r_.body);
    if (!doc.ok()) return refused(doc.error());
    // The limits are checked before anything changes, as the rest is.
    std::optional<auth::VHost> limits;
    auto params = doc->find("parameters");
    if (params != doc->end() && params->is_array()) {
      for (size_t i = 0; i < params->size(); ++i) {
        const json& p = (*params)[i];
        if (!p.is_object() || p.value("component", "") != "vhost-limits") continue;
        auth::VHost v;
        v.name = vhost;
        Status st = auth::apply_vhost_limits_value(p.value("value", json()), "request body", i, &v);
        if (!st.ok()) return refused(st.error());
        limits = std::move(v);
      }
    }
    for (const char* section :
         {"users", "vhosts", "permissions", "topic_permissions", "parameters"}) {
      doc->erase(section);
    }
    auto queues = doc->find("queues");
    if (queues != doc->end() && queues->is_array()) {
      for (auto& q : *queues) {
        if (q.is_object()) q["vhost"] = vhost;
      }
    }
    ApiReply imported = import_definitions(doc->dump());
    if (!limits || imported.status >= 300) return imported;
    Status st = admin_.edit([&](auth::AccessOverlay* o, const auth::AccessControl& now) {
      const auth::VHost* v = now.find_vhost(vhost);
      if (!v) return Status(Error(Errc::not_found, "no such vhost"));
      auth::VHost changed = *v;
      changed.max_connections = limits->max_connections;
      changed.max_queues = limits->max_queues;
      overlay_put_vhost(o, std::move(changed));
      return Status::OK();
    });
    if (!st.ok()) return refused(st.error());
    spdlog::info("http: user '{}' imported the limits of vhost '{}' from definitions", caller_,
                 vhost);
    return imported;
  }

  // RabbitMQ's import, for what strata models: everything is checked
  // before anything changes (a malformed file, a stream argument strata
  // refuses, a stream that exists with other arguments: 400, nothing
  // done); then the vhosts, users and permissions go in as one live change
  // and the streams are created, each in its vhost. What strata does not
  // hold (queues that are not streams) is listed as skipped.
  ApiReply import_definitions(const std::string& body) {
    auto defs = auth::parse_definitions(body, "request body");
    if (!defs.ok()) return refused(defs.error());
    // With from_vhost, that vhost's entries are "/"'s, and only they count.
    const std::string& from = r_.from_vhost;
    std::vector<auth::VHost> vhosts;
    json skipped = json::array();
    for (const auto& v : defs->vhosts) {
      if (!from.empty()) {
        if (v.name != from) skipped.push_back(fmt::format("vhost '{}'", v.name));
        continue;
      }
      if (Status vs = validate_vhost_name(v.name); !vs.ok()) return refused(vs.error());
      if (!now_->has_vhost(v.name)) vhosts.push_back(v);
    }
    auto take = [&](std::string* vhost) {
      if (from.empty()) {
        return now_->has_vhost(*vhost) ||
               std::any_of(vhosts.begin(), vhosts.end(),
                           [&](const auth::VHost& v) { return v.name == *vhost; });
      }
      if (*vhost != from) return false;
      *vhost = "/";
      return true;
    };
    std::vector<auth::UserPermission> perms;
    for (auto p : defs->permissions) {
      const std::string was = p.vhost;
      if (take(&p.vhost)) {
        perms.push_back(std::move(p));
      } else {
        skipped.push_back(fmt::format("permissions of '{}' in vhost '{}'", p.user, was));
      }
    }
    for (const auto& q : defs->skipped_queues) {
      skipped.push_back(fmt::format("queue '{}' in vhost '{}': type {}", q.name, q.vhost, q.type));
    }
    auto existing = node_.list();
    if (!existing.ok()) return refused(existing.error());
    std::vector<std::pair<std::string, node::StreamSettings>> to_create;
    json existed = json::array();
    for (auto sd : defs->streams) {
      const std::string was = sd.vhost;
      if (!take(&sd.vhost)) {
        skipped.push_back(fmt::format("stream '{}' in vhost '{}'", sd.name, was));
        continue;
      }
      const std::string stored = qualified_stream_name(sd.vhost, sd.name);
      if (Status ns = validate_stream_name(stored); !ns.ok()) return refused(ns.error());
      std::vector<std::string> ignored;
      auto settings = settings_from_queue_arguments(sd.arguments, &ignored);
      if (!settings.ok()) {
        return error_reply(400, "bad_request",
                           fmt::format("stream '{}': {}", sd.name, settings.error().message));
      }
      for (const auto& i : ignored) {
        skipped.push_back(fmt::format("stream '{}': argument {}", sd.name, i));
      }
      auto it = std::find_if(existing->begin(), existing->end(),
                             [&](const auto& e) { return e.first == stored; });
      if (it == existing->end()) {
        to_create.emplace_back(stored, *settings);
      } else if (it->second == *settings) {
        existed.push_back(printable_stream(stored));
      } else {
        return error_reply(
            400, "bad_request",
            fmt::format("stream {} exists with other arguments", printable_stream(stored)));
      }
    }
    Status st = admin_.edit([&](auth::AccessOverlay* o, const auth::AccessControl& now) {
      for (const auto& v : vhosts) overlay_put_vhost(o, v);
      for (const auto& u : defs->users) overlay_put_user(o, u);
      for (const auto& p : perms) {
        const bool known = now.find_user(p.user) != nullptr ||
                           std::any_of(defs->users.begin(), defs->users.end(),
                                       [&](const auth::User& u) { return u.name == p.user; });
        if (!known) {
          return Status(Error(Errc::invalid_argument,
                              fmt::format("permissions of unknown user '{}'", p.user)));
        }
        overlay_set_permission(o, p);
      }
      return Status::OK();
    });
    if (!st.ok()) return refused(st.error());
    if (!vhosts.empty() || !defs->users.empty() || !perms.empty()) counters_.changes += 1;
    json created = json::array();
    for (const auto& [name, settings] : to_create) {
      Status c = node_.create(name, settings);
      if (!c.ok() && c.error().code != Errc::already_exists) {
        return error_reply(
            500, "internal_error",
            fmt::format("stream {}: {} (vhosts, users, permissions and the streams before it "
                        "are imported)",
                        printable_stream(name), c.error().message));
      }
      (c.ok() ? created : existed).push_back(printable_stream(name));
    }
    spdlog::info(
        "http: user '{}' imported definitions: {} vhosts, {} users, {} permissions, {} streams "
        "created, {} skipped",
        caller_, vhosts.size(), defs->users.size(), perms.size(), created.size(), skipped.size());
    return reply(200, {{"vhosts", vhosts.size()},
                       {"users", defs->users.size()},
                       {"permissions", perms.size()},
                       {"streams_created", created},
                       {"streams_existing", existed},
                       {"skipped", skipped}});
  }

  // GET /api/history[?stream=S]: a stream's samples (404 for one this
  // node has not sampled: not served here, or not yet), or the totals.
  ApiReply history() {
    if (!node_.history) return error_reply(503, "unavailable", "no history here");
    const auto samples = node_.history->of(r_.stream);
    // The totals exist from the first round; before it they are empty.
    if (!samples && !r_.stream.empty()) {
      return error_reply(
          404, "not_found",
          fmt::format("no history of stream {} on this node", printable_stream(r_.stream)));
    }
    json out = stream_place_json(r_.stream, "stream");
    if (r_.stream.empty()) out["stream"] = nullptr;  // the node's totals
    out["interval_ms"] = node_.history_interval_ms;
    out["samples"] = history_json(samples.value_or(std::vector<HistorySample>{}));
    return reply(200, out);
  }

  ApiReply queues(const QueuePath& p) {
    return queues_api(
        node_, r_, p, caller_, [&](const std::string& v) { return now_->has_vhost(v); },
        [&](json items) { return paginate(std::move(items)); });
  }

  // RabbitMQ's GET /api/nodes: the cluster's nodes (this one alone when
  // not clustered), each a disc node, running while it is registered.
  ApiReply nodes() {
    if (!node_.cluster) return error_reply(503, "unavailable", "no cluster view here");
    json items = json::array();
    // This node's own figures, as RabbitMQ's nodes carry them (mem_used in
    // bytes, uptime in ms); the other nodes' are on their own endpoints.
    const node::Node::ProcessFigures here =
        node_.process ? node_.process() : node::Node::ProcessFigures{};
    for (const auto& n : node_.cluster().value("nodes", json::array())) {
      json j = n;
      j["type"] = "disc";
      j["running"] = true;
      if (n.value("this_node", false)) {
        j["mem_used"] = here.rss_bytes;
        j["uptime"] = here.uptime_ms;
      }
      items.push_back(std::move(j));
    }
    return paginate(std::move(items));
  }

  // /api/stream/connections, publishers, consumers.
  ApiReply stream_lists(const std::string& what) {
    if (what != "connections" && what != "publishers" && what != "consumers") {
      return error_reply(404, "not_found", "no such resource");
    }
    json conns = node_.connections ? node_.connections() : json::array();
    json items = json::array();
    for (auto& c : conns) {
      if (what == "connections") {
        json j = c;
        j["publishers"] = c["publishers"].size();
        j["consumers"] = c["subscriptions"].size();
        j.erase("subscriptions");
        items.push_back(std::move(j));
        continue;
      }
      const char* list = what == "publishers" ? "publishers" : "subscriptions";
      for (auto& e : c[list]) {
        json j = e;
        j["connection"] = c["id"];
        j["peer"] = c["peer"];
        j["user"] = c["user"];
        j["vhost"] = c["vhost"];
        items.push_back(std::move(j));
      }
    }
    return paginate(std::move(items));
  }

  // RabbitMQ's pagination: only when asked for (?page=N, page_size
  // default 100, at most 500).
  ApiReply paginate(json items) {
    if (r_.page.empty()) return reply(200, items);
    auto number = [](const std::string& text, int64_t fallback) -> int64_t {
      if (text.empty()) return fallback;
      int64_t v = 0;
      auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      return ec == std::errc() && p == text.data() + text.size() ? v : -1;
    };
    const int64_t page = number(r_.page, 1);
    const int64_t size = number(r_.page_size, 100);
    if (page < 1 || size < 1 || size > 500) {
      return error_reply(400, "bad_request", "page must be >= 1 and page_size 1..500");
    }
    const int64_t total = int64_t(items.size());
    const int64_t pages = std::max<int64_t>(1, (total + size - 1) / size);
    if (page > pages) {
      return error_reply(400, "bad_request",
                         fmt::format("page {} is beyond the last page ({})", page, pages));
    }
    json slice = json::array();
    for (int64_t i = (page - 1) * size; i < std::min(total, page * size); ++i) {
      slice.push_back(std::move(items[size_t(i)]));
    }
    return reply(200, {{"items", slice},
                       {"page", page},
                       {"page_size", size},
                       {"page_count", pages},
                       {"item_count", slice.size()},
                       {"total_count", total},
                       {"filtered_count", total}});
  }

  AccessAdmin& admin_;
  ApiCounters& counters_;
  const ApiNode& node_;
  // A copy: its stream is the stored name (common/stream_name.h).
  ApiRequest r_;
  std::shared_ptr<const auth::AccessControl> now_;
  std::string caller_;
};

}  // namespace

ApiReply handle_management_api(AccessAdmin& admin, ApiCounters& counters, const ApiNode& streams,
                               const ApiRequest& r) {
  return Api(admin, counters, streams, r).run();
}

}  // namespace strata::server
