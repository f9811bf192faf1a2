#include "server/management_queues.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/stream_name.h"
#include "server/definitions_streams.h"
#include "server/management_streams.h"

namespace strata::server {

using json = nlohmann::json;

namespace {

constexpr std::string_view kQueues = "/api/queues";

// A body's boolean as RabbitMQ reads it: true/false, or their strings
// (rabbitmqadmin sends "true"); `fallback` when absent.
Result<bool> body_bool(const json& body, const char* key, bool fallback) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return fallback;
  if (it->is_boolean()) return it->get<bool>();
  if (it->is_string() && (*it == "true" || *it == "false")) return *it == "true";
  return Error(Errc::invalid_argument, fmt::format("{} is {}, not a boolean", key, it->dump()));
}

}  // namespace

std::optional<QueuePath> queue_path(std::string_view path) {
  if (!path.starts_with(kQueues)) return std::nullopt;
  std::string_view rest = path.substr(kQueues.size());
  if (rest.empty() || rest == "/") return QueuePath{};
  if (rest.front() != '/') return std::nullopt;
  rest.remove_prefix(1);
  QueuePath p;
  // The vhost "/" arrives decoded: an empty segment, then the name's slash.
  if (rest.front() == '/') {
    p.vhost = std::string(kDefaultVhost);
    rest.remove_prefix(1);
    if (!rest.empty() && rest.front() == '/') rest.remove_prefix(1);
    p.name = std::string(rest);
    return p;
  }
  // Other vhost names hold no "/": the rest is the queue's name.
  const size_t slash = rest.find('/');
  p.vhost = std::string(rest.substr(0, slash));
  if (slash != std::string_view::npos) p.name = std::string(rest.substr(slash + 1));
  return p;
}

json queue_entry(json e) {
  // (Its "arguments" hold x-queue-type already: queue_arguments_from_settings.)
  e["auto_delete"] = false;
  e["exclusive"] = false;
  e["state"] = "running";
  // A stream keeps what it holds until retention trims it: every message
  // is ready to read again and none waits for an acknowledgement. Where
  // this node does not serve the stream it does not know the count.
  if (e.contains("messages")) {
    e["messages_ready"] = e["messages"];
    e["messages_unacknowledged"] = 0;
  } else {
    e["messages"] = nullptr;
  }
  return e;
}

Result<node::StreamSettings> stream_settings_of_queue(const json& body, std::string_view name) {
  const json args = body.value("arguments", json::object());
  if (!args.is_object()) return Error(Errc::invalid_argument, "arguments is not an object");
  const json type = args.value("x-queue-type", json());
  if (type != "stream") {
    return Error(Errc::invalid_argument,
                 fmt::format("queue '{}' would be {}: strata holds streams only (declare it "
                             "with the argument x-queue-type \"stream\"; rabbitmqadmin: "
                             "queue_type=stream)",
                             name,
                             type.is_null() ? std::string("a classic queue (no x-queue-type)")
                                            : fmt::format("of type {}", type.dump())));
  }
  STRATA_ASSIGN_OR_RETURN(bool durable, body_bool(body, "durable", true));
  STRATA_ASSIGN_OR_RETURN(bool auto_delete, body_bool(body, "auto_delete", false));
  STRATA_ASSIGN_OR_RETURN(bool exclusive, body_bool(body, "exclusive", false));
  if (!durable || auto_delete || exclusive) {
    return Error(Errc::invalid_argument,
                 fmt::format("queue '{}': a stream is durable, never auto-deleted and never "
                             "exclusive (durable {}, auto_delete {}, exclusive {})",
                             name, durable, auto_delete, exclusive));
  }
  std::vector<std::string> ignored;
  auto settings = settings_from_queue_arguments(args, &ignored);
  if (!settings.ok()) {
    return Error(Errc::invalid_argument,
                 fmt::format("queue '{}': {}", name, settings.error().message));
  }
  return settings;
}

ApiReply queues_api(const ApiNode& node, const ApiRequest& r, const QueuePath& p,
                    const std::string& caller,
                    const std::function<bool(const std::string&)>& has_vhost,
                    const std::function<ApiReply(json)>& list) {
  if (!p.vhost.empty() && !has_vhost(p.vhost)) {
    return error_reply(404, "not_found", fmt::format("no vhost '{}'", p.vhost));
  }
  const std::string stored = qualified_stream_name(p.vhost, p.name);
  if (r.method == "GET") {
    auto entries = stream_entries(node, p.name.empty() ? std::string() : stored);
    if (!entries.ok()) return refused(entries.error());
    json items = json::array();
    for (auto& e : *entries) {
      if (!p.vhost.empty() && e["vhost"] != p.vhost) continue;
      items.push_back(queue_entry(std::move(e)));
    }
    if (p.name.empty()) return list(std::move(items));
    if (items.empty()) {
      return error_reply(404, "not_found", fmt::format("no stream {}", printable_stream(stored)));
    }
    return reply(200, items[0]);
  }
  if (p.name.empty()) return error_reply(405, "method_not_allowed", r.method + " " + r.path);
  if (Status ns = validate_stream_name(stored); !ns.ok()) return refused(ns.error());
  if (r.method == "PUT") {
    auto body = body_object(r.body);
    if (!body.ok()) return refused(body.error());
    auto settings = stream_settings_of_queue(*body, p.name);
    if (!settings.ok()) return refused(settings.error());
    Status st = node.create(stored, *settings);
    if (!st.ok() && st.error().code == Errc::already_exists) return no_content();
    if (!st.ok()) return refused(st.error());
    spdlog::info("http: user '{}' declared stream {} as a queue", caller, printable_stream(stored));
    return ApiReply{201, ""};
  }
  if (r.method == "DELETE") {
    Status st = node.remove(stored);
    // RabbitMQ's purge: DELETE .../NAME/contents, when NAME is a stream
    // and NAME/contents is not.
    constexpr std::string_view kContents = "/contents";
    if (!st.ok() && st.error().code == Errc::not_found && p.name.ends_with(kContents)) {
      const std::string queue =
          qualified_stream_name(p.vhost, p.name.substr(0, p.name.size() - kContents.size()));
      auto found = stream_entries(node, queue);
      if (found.ok() && !found->empty()) {
        return error_reply(400, "bad_request",
                           fmt::format("stream {} cannot be purged: its retention "
                                       "(x-max-age, x-max-length-bytes) trims it",
                                       printable_stream(queue)));
      }
    }
    if (!st.ok()) return refused(st.error());
    spdlog::info("http: user '{}' deleted stream {} as a queue", caller, printable_stream(stored));
    return no_content();
  }
  return error_reply(405, "method_not_allowed", r.method + " " + r.path);
}

}  // namespace strata::server
