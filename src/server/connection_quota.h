// ConnectionQuota: how many open connections each user and each virtual
// host has, against server.max_connections_per_user and
// server.max_connections_per_vhost (one value for all), or the user's or
// vhost's own `max-connections` limit where the definitions give one
// (RabbitMQ's user and vhost limits, auth::User / auth::VHost). A connection takes its
// place when Open succeeds and gives it back when it closes; one over
// either limit is refused at Open (12, virtual host access failure), as
// RabbitMQ refuses it before the connection is opened.
//
// Thread safety: any thread.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace strata::server {

class ConnectionQuota {
 public:
  // 0: no limit.
  ConnectionQuota(uint32_t per_user, uint32_t per_vhost)
      : per_user_(per_user), per_vhost_(per_vhost) {}

  enum class Outcome { taken, user_full, vhost_full };
  // Connection `id` of `user` opens `vhost`: its place, or which limit is
  // reached (nothing taken then; *limit gets that limit). `user_max` and
  // `vhost_max` are the user's and vhost's own limits (nullopt: the
  // server's; 0 refuses every connection, as RabbitMQ's 0).
  Outcome take(uint64_t id, const std::string& user, const std::string& vhost,
               std::optional<uint32_t> user_max = std::nullopt,
               std::optional<uint32_t> vhost_max = std::nullopt, uint32_t* limit = nullptr);
  // Connection `id` closed; nothing if it held no place. Whether it held one
  // (it was opened).
  bool release(uint64_t id);

  size_t of_user(const std::string& user) const;
  size_t of_vhost(const std::string& vhost) const;
  uint32_t per_user() const { return per_user_; }
  uint32_t per_vhost() const { return per_vhost_; }

 private:
  const uint32_t per_user_;
  const uint32_t per_vhost_;
  mutable std::mutex mu_;
  std::map<uint64_t, std::pair<std::string, std::string>> holders_;
  std::map<std::string, size_t> users_;
  std::map<std::string, size_t> vhosts_;
};

}  // namespace strata::server
