// The management API's answers: JSON bodies, RabbitMQ's error shape
// {"error": ..., "reason": ...}, and the status an Error maps to.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/result.h"

namespace strata::server {

struct ApiReply {
  int status = 200;
  std::string body;  // JSON ("" for 204)
};

ApiReply reply(int status, const nlohmann::json& body);
ApiReply error_reply(int status, std::string_view error, std::string_view reason);
ApiReply no_content();
// not_found 404, invalid_argument 400, already_exists 409, anything else 503 (the change could
// not be made now: a catalog or store that failed).
ApiReply refused(const Error& e);

// A request body: a JSON object ("" reads as {}); invalid_argument otherwise.
Result<nlohmann::json> body_object(const std::string& body);

}  // namespace strata::server
