// The CLI's side of a running node's management API
// (server/management_api.h): the login flags every such command takes and
// one call with them.
#pragma once

#include <CLI/CLI.hpp>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/result.h"
#include "server/admin_http.h"

namespace strata::cli {

// --node (default http://127.0.0.1:9552, the node's --http), --admin-user
// (default guest, or $STRATA_ADMIN_USER) and --admin-password-file (else
// $STRATA_ADMIN_PASSWORD, else "guest").
struct AdminLogin {
  std::string node = "http://127.0.0.1:9552";
  std::string user = "guest";
  std::string password_file;
};

void add_login_flags(CLI::App* cmd, AdminLogin* l);

// Percent-encodes a path segment (a vhost "/" becomes %2F).
std::string encode_segment(std::string_view s);

// A protocol argument's name as the API takes it, RabbitMQ's queue argument
// (server/definitions_streams.h): "x-" before it, strata's own as it is.
std::string queue_argument_name(const std::string& arg);

// One API call; the reply when its status is one of `ok`, else an error
// naming the call and the node's reason (404: not_found, 400:
// invalid_argument, 409: already_exists, others: unavailable).
Result<server::ApiReply> admin_call(const AdminLogin& l, std::string method, std::string path,
                                    std::string body, std::initializer_list<int> ok);
// A GET answered 200 with JSON.
Result<nlohmann::json> admin_get_json(const AdminLogin& l, const std::string& path);

}  // namespace strata::cli
