#include "server/definitions_streams.h"

#include <fmt/format.h>

#include "server/stream_args.h"

namespace strata::server {

using json = nlohmann::json;

Result<node::StreamSettings> settings_from_queue_arguments(const json& arguments,
                                                           std::vector<std::string>* ignored) {
  std::vector<std::pair<std::string, std::string>> args;
  if (!arguments.is_null() && !arguments.is_object()) {
    return Error(Errc::invalid_argument, "arguments is not an object");
  }
  if (arguments.is_object()) {
    for (const auto& [key, value] : arguments.items()) {
      if (key == "x-queue-type" || key == "x-queue-leader-locator") {
        continue;
      }
      std::string text;
      if (value.is_string()) {
        text = value.get<std::string>();
      } else if (value.is_number_integer() || value.is_boolean()) {
        text = value.dump();
      } else {
        return Error(
            Errc::invalid_argument,
            fmt::format("argument {} is {}, not a string or an integer", key, value.type_name()));
      }
      // RabbitMQ's queue arguments are the protocol's Create arguments
      // with "x-" before them; strata's own keep their x-strata- prefix.
      const bool rabbit = key.starts_with("x-") && !key.starts_with("x-strata-");
      args.emplace_back(rabbit ? key.substr(2) : key, std::move(text));
    }
  }
  return parse_stream_args(args, ignored);
}

namespace {

// The arguments an alteration may carry, by their names without RabbitMQ's
// "x-" (as Create has them), and the settings they change.
struct Alterable {
  const char* argument;
  std::optional<uint64_t> node::StreamSettings::*bytes;
  std::optional<int64_t> node::StreamSettings::*ms;
};
constexpr Alterable kAlterable[] = {
    {"max-length-bytes", &node::StreamSettings::max_bytes, nullptr},
    {"max-age", nullptr, &node::StreamSettings::max_age_ms},
    {"x-strata-local-max-bytes", &node::StreamSettings::local_max_bytes, nullptr},
};

}  // namespace

Result<node::StreamSettings> alter_retention(node::StreamSettings cur, const json& arguments) {
  static const std::string kWhich =
      "x-max-age, x-max-length-bytes and x-strata-local-max-bytes (null removes one)";
  if (!arguments.is_object() || arguments.empty()) {
    return Error(Errc::invalid_argument,
                 "the body must be {\"arguments\": {...}} with any of " + kWhich);
  }
  json given = json::object();
  for (const auto& [key, value] : arguments.items()) {
    const std::string k =
        key.starts_with("x-") && !key.starts_with("x-strata-") ? key.substr(2) : key;
    const Alterable* a = nullptr;
    for (const auto& c : kAlterable) {
      if (k == c.argument) a = &c;
    }
    if (!a) {
      return Error(Errc::invalid_argument,
                   fmt::format("argument {} is fixed when the stream is created; only {} change "
                               "while it runs",
                               key, kWhich));
    }
    if (value.is_null()) {
      if (a->bytes) cur.*(a->bytes) = std::nullopt;
      if (a->ms) cur.*(a->ms) = std::nullopt;
    } else {
      given[k] = value;
    }
  }
  std::vector<std::string> ignored;
  STRATA_ASSIGN_OR_RETURN(node::StreamSettings g, settings_from_queue_arguments(given, &ignored));
  for (const auto& c : kAlterable) {
    if (!given.contains(c.argument)) continue;
    if (c.bytes) cur.*(c.bytes) = g.*(c.bytes);
    if (c.ms) cur.*(c.ms) = g.*(c.ms);
  }
  return cur;
}

json queue_arguments_from_settings(const node::StreamSettings& s) {
  json a = json::object();
  a["x-queue-type"] = "stream";
  if (s.max_bytes) a["x-max-length-bytes"] = *s.max_bytes;
  // Whole seconds: max-age has no unit below the second.
  if (s.max_age_ms) a["x-max-age"] = fmt::format("{}s", *s.max_age_ms / 1000);
  if (s.segment_bytes) a["x-stream-max-segment-size-bytes"] = *s.segment_bytes;
  if (s.filter_size_bytes) a["x-stream-filter-size-bytes"] = *s.filter_size_bytes;
  if (s.initial_cluster_size) a["x-initial-cluster-size"] = *s.initial_cluster_size;
  if (s.tiering) a["x-strata-tiering"] = *s.tiering ? "true" : "false";
  if (s.fragment_target_bytes) {
    a["x-strata-fragment-target-bytes"] = std::to_string(*s.fragment_target_bytes);
  }
  if (s.fragment_max_age_ms) {
    a["x-strata-fragment-max-age-ms"] = std::to_string(*s.fragment_max_age_ms);
  }
  if (s.local_max_bytes) a["x-strata-local-max-bytes"] = std::to_string(*s.local_max_bytes);
  if (s.confirm) a["x-strata-confirm"] = std::string(node::confirm_mode_name(*s.confirm));
  return a;
}

}  // namespace strata::server
