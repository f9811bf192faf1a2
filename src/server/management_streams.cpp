#include "server/management_streams.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <map>

#include "common/stream_name.h"
#include "server/definitions_streams.h"

namespace strata::server {

using json = nlohmann::json;

namespace {

uint64_t u64(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

}  // namespace

std::map<std::string, StreamClients> stream_clients(const std::vector<ClientTally>& tallies) {
  std::map<std::string, StreamClients> by_stream;
  for (const auto& t : tallies) {
    for (const auto& p : t.publisher_streams) by_stream[p].publishers += 1;
    for (const auto& s : t.consumers) {
      StreamClients& c = by_stream[s.stream];
      c.consumers += 1;
      c.max_lag = std::max(c.max_lag, s.lag);
      if (!s.group.empty()) {
        uint64_t& lag = c.group_lag[s.group];
        lag = std::max(lag, s.lag);
      }
    }
  }
  return by_stream;
}

StreamSpan stream_span(const json& status) {
  StreamSpan span{u64(status, "local_first_offset"), u64(status, "local_next_offset")};
  auto t = status.find("tiering");
  if (t != status.end() && t->is_object()) {
    const uint64_t rf = u64(*t, "remote_first_offset"), rn = u64(*t, "remote_next_offset");
    // The remote tier reaches further back once local retention freed
    // what it holds.
    if (rn > rf) span.first = std::min(span.first, rf);
  }
  return span;
}

json stream_place_json(std::string_view stored, const char* name_key) {
  const StreamPlace place = split_stream_name(stored);
  return {{name_key, std::string(place.name)}, {"vhost", std::string(place.vhost)}};
}

json stream_entry(const std::string& name, const node::StreamSettings& settings, const json& status,
                  const StreamClients& c) {
  // `name` is stored: the entry shows it as its vhost's clients name it.
  json j = stream_place_json(name);
  j.update(json{{"type", "stream"},
                {"durable", true},
                {"arguments", queue_arguments_from_settings(settings)},
                {"served_here", status.is_object()},
                {"publishers", c.publishers},
                {"consumers", c.consumers},
                {"consumer_max_lag", c.max_lag}});
  if (!status.is_object()) return j;
  const uint64_t local_first = u64(status, "local_first_offset");
  const uint64_t next = u64(status, "local_next_offset");
  j["effective"] = status.value("effective", json::object());
  j["local"] = {
      {"first_offset", local_first}, {"next_offset", next}, {"bytes", u64(status, "local_bytes")}};
  const StreamSpan span = stream_span(status);
  auto t = status.find("tiering");
  if (t != status.end() && t->is_object()) {
    const uint64_t rf = u64(*t, "remote_first_offset"), rn = u64(*t, "remote_next_offset");
    j["remote"] = {{"first_offset", rf}, {"next_offset", rn}, {"bytes", u64(*t, "remote_bytes")}};
    j["upload_lag"] = {
        {"offsets", u64(*t, "unpersisted_tail_offsets")},
        {"bytes", u64(*t, "unpersisted_tail_bytes")},
        {"seconds_since_last_persist", t->value("seconds_since_last_persist", json())}};
    j["tiering_state"] = t->value("state", "");
    j["tiering_error"] = t->value("last_error", "");
  } else {
    j["remote"] = nullptr;
    j["upload_lag"] = nullptr;
  }
  j["first_offset"] = span.first;
  j["next_offset"] = span.next;
  j["messages"] = span.messages();
  return j;
}

Result<json> stream_entries(const ApiNode& node, const std::string& name) {
  if (!node.list) return Error(Errc::unavailable, "no streams here");
  STRATA_ASSIGN_OR_RETURN(auto all, node.list());
  const json status = node.stream_status ? node.stream_status() : json::object();
  const auto clients = stream_clients(node.tallies ? node.tallies() : std::vector<ClientTally>{});
  std::map<std::string, std::string> super_of;
  if (node.super_streams) {
    for (const auto& ss : node.super_streams()) {
      for (const auto& p : ss.partitions) super_of[p] = ss.name;
    }
  }
  json items = json::array();
  for (const auto& [n, s] : all) {
    if (!name.empty() && n != name) continue;
    auto st = status.find(n);
    auto c = clients.find(n);
    items.push_back(stream_entry(n, s, st == status.end() ? json() : *st,
                                 c == clients.end() ? StreamClients{} : c->second));
    auto sup = super_of.find(n);
    items.back()["super_stream"] =
        sup == super_of.end() ? json() : json(std::string(split_stream_name(sup->second).name));
  }
  return items;
}

HistorySample sample_of_entry(int64_t t_ms, const json& entry) {
  HistorySample s;
  s.t_ms = t_ms;
  s.messages = u64(entry, "messages");
  s.consumer_max_lag = u64(entry, "consumer_max_lag");
  auto lag = entry.find("upload_lag");
  if (lag != entry.end() && lag->is_object()) {
    s.upload_lag_bytes = u64(*lag, "bytes");
    s.upload_lag_offsets = u64(*lag, "offsets");
  }
  return s;
}

ApiReply streams_api(const ApiNode& node, const ApiRequest& r, const std::string& name,
                     const std::string& caller) {
  if (r.method == "GET") {
    auto entries = stream_entries(node, name);
    if (!entries.ok()) return refused(entries.error());
    json items = *entries;
    if (name.empty()) {
      // ?vhost=V lists that vhost's streams only.
      if (!r.vhost.empty()) {
        json mine = json::array();
        for (auto& e : items) {
          if (e["vhost"] == r.vhost) mine.push_back(std::move(e));
        }
        items = std::move(mine);
      }
      return reply(200, items);
    }
    if (items.empty()) {
      return error_reply(404, "not_found", fmt::format("no stream {}", printable_stream(name)));
    }
    return reply(200, items[0]);
  }
  if (name.empty()) return error_reply(405, "method_not_allowed", r.method + " " + r.path);
  if (r.method == "PUT") {
    auto b = body_object(r.body);
    if (!b.ok()) return refused(b.error());
    std::vector<std::string> ignored;
    auto settings = settings_from_queue_arguments(b->value("arguments", json::object()), &ignored);
    if (!settings.ok()) return refused(settings.error());
    Status st = node.create(name, *settings);
    if (!st.ok() && st.error().code == Errc::already_exists) return no_content();
    if (!st.ok()) return refused(st.error());
    spdlog::info("http: user '{}' created stream {}", caller, printable_stream(name));
    json out = stream_place_json(name);
    out["ignored_arguments"] = ignored;
    return reply(201, out);
  }
  if (r.method == "PATCH") {
    if (!node.alter || !node.settings) return error_reply(503, "unavailable", "no streams here");
    auto b = body_object(r.body);
    if (!b.ok()) return refused(b.error());
    auto cur = node.settings(name);
    if (!cur.ok()) return refused(cur.error());
    auto to = alter_retention(*cur, b->value("arguments", json()));
    if (!to.ok()) return refused(to.error());
    Status st = node.alter(name, *to);
    if (!st.ok()) return refused(st.error());
    spdlog::info("http: user '{}' altered stream {}: {}", caller, printable_stream(name),
                 queue_arguments_from_settings(*to).dump());
    json out = stream_place_json(name);
    out["arguments"] = queue_arguments_from_settings(*to);
    return reply(200, out);
  }
  if (r.method == "DELETE") {
    Status st = node.remove(name);
    if (!st.ok()) return refused(st.error());
    spdlog::info("http: user '{}' deleted stream {}", caller, printable_stream(name));
    return no_content();
  }
  return error_reply(405, "method_not_allowed", r.method + " " + r.path);
}

ApiReply offsets_api(const ApiNode& node, const ApiRequest& r, const std::string& caller) {
  if (r.stream.empty() || r.reference.empty()) {
    return error_reply(400, "bad_request", "?stream=NAME&reference=REF are required");
  }
  if (!node.store_offset || !node.query_offset) {
    return error_reply(503, "unavailable", "no offset tracking here");
  }
  if (r.method == "GET") {
    auto q = node.query_offset(r.stream, r.reference);
    if (!q.ok()) return refused(q.error());
    json out = stream_place_json(r.stream, "stream");
    out["reference"] = r.reference;
    out["offset"] = *q ? json(**q) : json(nullptr);
    return reply(200, out);
  }
  if (r.method != "PUT") return error_reply(405, "method_not_allowed", r.method + " " + r.path);
  auto b = body_object(r.body);
  if (!b.ok()) return refused(b.error());
  const json o = b->value("offset", json());
  uint64_t offset = 0;
  if (o.is_number_unsigned()) {
    offset = o.get<uint64_t>();
  } else if (o == "first" || o == "next") {
    const json status = node.stream_status ? node.stream_status() : json::object();
    auto st = status.find(r.stream);
    if (st == status.end()) {
      return error_reply(
          400, "bad_request",
          fmt::format("stream {} is not served here: give a number", printable_stream(r.stream)));
    }
    const json entry = stream_entry(r.stream, {}, *st, StreamClients{});
    offset = entry[o == "first" ? "first_offset" : "next_offset"].get<uint64_t>();
  } else {
    return error_reply(400, "bad_request",
                       "the body must be {\"offset\": N}, with N an offset, \"first\" or \"next\"");
  }
  Status st = node.store_offset(r.stream, r.reference, offset);
  if (!st.ok()) return refused(st.error());
  spdlog::info("http: user '{}' set the offset of reference '{}' on stream {} to {}", caller,
               r.reference, printable_stream(r.stream), offset);
  json out = stream_place_json(r.stream, "stream");
  out["reference"] = r.reference;
  out["offset"] = offset;
  return reply(200, out);
}

ApiReply close_connection_api(const ApiNode& node, const std::string& id,
                              const std::string& caller) {
  uint64_t n = 0;
  auto [p, ec] = std::from_chars(id.data(), id.data() + id.size(), n);
  if (ec != std::errc() || p != id.data() + id.size()) {
    // RabbitMQ's name ("PEER:PORT -> HOST:PORT"), as rabbitmqadmin and the
    // lists give it: the connection of that name, if one has it.
    bool found = false;
    for (const auto& c : node.connections ? node.connections() : nlohmann::json::array()) {
      if (c.value("name", "") == id) {
        n = c.value("id", uint64_t(0));
        found = true;
        break;
      }
    }
    if (!found) return error_reply(404, "not_found", fmt::format("no connection '{}'", id));
  }
  if (!node.close_connection ||
      !node.close_connection(
          n, fmt::format("closed by user '{}' through the management API", caller))) {
    return error_reply(404, "not_found", fmt::format("no connection {}", n));
  }
  return no_content();
}

}  // namespace strata::server
