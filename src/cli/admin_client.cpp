#include "cli/admin_client.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdlib>

#include "cli/password_input.h"

namespace strata::cli {

void add_login_flags(CLI::App* cmd, AdminLogin* l) {
  cmd->add_option("--node", l->node, "The node's HTTP endpoint (its --http address)");
  cmd->add_option("--admin-user", l->user, "Log in as this administrator")
      ->envname("STRATA_ADMIN_USER");
  cmd->add_option("--admin-password-file", l->password_file,
                  "The administrator's password (default: $STRATA_ADMIN_PASSWORD, else guest)");
}

std::string queue_argument_name(const std::string& arg) {
  return arg.starts_with("x-strata-") ? arg : "x-" + arg;
}

std::string encode_segment(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += char(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

Result<server::ApiReply> admin_call(const AdminLogin& l, std::string method, std::string path,
                                    std::string body, std::initializer_list<int> ok) {
  server::ApiCall c{std::move(method), std::move(path), std::move(body), l.user, {}};
  if (!l.password_file.empty()) {
    STRATA_ASSIGN_OR_RETURN(c.password, read_password_input(l.password_file));
  } else if (const char* env = std::getenv("STRATA_ADMIN_PASSWORD")) {
    c.password = env;
  } else {
    c.password = "guest";
  }
  STRATA_ASSIGN_OR_RETURN(server::ApiReply r, server::api_request(l.node, c));
  for (int s : ok) {
    if (r.status == s) return r;
  }
  std::string reason = r.body;
  nlohmann::json b = nlohmann::json::parse(r.body, nullptr, false);
  if (b.is_object() && b.contains("reason") && b["reason"].is_string()) {
    reason = b["reason"].get<std::string>();
  }
  const Errc errc = r.status == 404   ? Errc::not_found
                    : r.status == 400 ? Errc::invalid_argument
                    : r.status == 409 ? Errc::already_exists
                                      : Errc::unavailable;
  return Error(errc, fmt::format("{} {}{}: HTTP {}: {}", c.method, l.node, c.path, r.status,
                                 reason.empty() ? "(no reason given)" : reason));
}

Result<nlohmann::json> admin_get_json(const AdminLogin& l, const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(server::ApiReply r, admin_call(l, "GET", path, "", {200}));
  nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_discarded()) {
    return Error(Errc::corrupt, fmt::format("GET {}{}: the answer is not JSON", l.node, path));
  }
  return j;
}

}  // namespace strata::cli
