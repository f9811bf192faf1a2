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
      if (key == "x-queue-type" || key == "x-queue-leader-locator" ||
          key == "x-initial-cluster-size") {
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

json queue_arguments_from_settings(const node::StreamSettings& s) {
  json a = json::object();
  a["x-queue-type"] = "stream";
  if (s.max_bytes) a["x-max-length-bytes"] = *s.max_bytes;
  // Whole seconds: max-age has no unit below the second.
  if (s.max_age_ms) a["x-max-age"] = fmt::format("{}s", *s.max_age_ms / 1000);
  if (s.segment_bytes) a["x-stream-max-segment-size-bytes"] = *s.segment_bytes;
  if (s.filter_size_bytes) a["x-stream-filter-size-bytes"] = *s.filter_size_bytes;
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
