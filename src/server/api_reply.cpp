#include "server/api_reply.h"

namespace strata::server {

using json = nlohmann::json;

ApiReply reply(int status, const json& body) {
  return ApiReply{status, body.dump(-1, ' ', false, json::error_handler_t::replace)};
}

ApiReply error_reply(int status, std::string_view error, std::string_view reason) {
  return reply(status, {{"error", error}, {"reason", reason}});
}

ApiReply no_content() {
  return ApiReply{204, ""};
}

ApiReply refused(const Error& e) {
  switch (e.code) {
    case Errc::not_found:
      return error_reply(404, "not_found", e.message);
    case Errc::invalid_argument:
      return error_reply(400, "bad_request", e.message);
    case Errc::already_exists:
      return error_reply(409, "conflict", e.message);
    default:
      return error_reply(503, "unavailable", e.message);
  }
}

Result<json> body_object(const std::string& body) {
  json b = json::parse(body.empty() ? "{}" : body, nullptr, false);
  if (!b.is_object()) {
    return Error(Errc::invalid_argument, "the request body is not a JSON object");
  }
  return b;
}

}  // namespace strata::server
