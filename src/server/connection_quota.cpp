#include "server/connection_quota.h"

namespace strata::server {
namespace {

size_t count_of(const std::map<std::string, size_t>& m, const std::string& k) {
  auto it = m.find(k);
  return it == m.end() ? 0 : it->second;
}

void drop(std::map<std::string, size_t>& m, const std::string& k) {
  auto it = m.find(k);
  if (it == m.end()) return;
  if (--it->second == 0) m.erase(it);
}

}  // namespace

ConnectionQuota::Outcome ConnectionQuota::take(uint64_t id, const std::string& user,
                                               const std::string& vhost,
                                               std::optional<uint32_t> user_max,
                                               std::optional<uint32_t> vhost_max, uint32_t* limit) {
  // The server's limit, 0 meaning none, where the definitions give none.
  auto effective = [](std::optional<uint32_t> own, uint32_t server) {
    return own ? own : server != 0 ? std::optional<uint32_t>(server) : std::nullopt;
  };
  const auto vmax = effective(vhost_max, per_vhost_);
  const auto umax = effective(user_max, per_user_);
  std::lock_guard l(mu_);
  if (holders_.count(id)) return Outcome::taken;
  // The vhost's limit first, as RabbitMQ checks it first.
  if (vmax && count_of(vhosts_, vhost) >= *vmax) {
    if (limit) *limit = *vmax;
    return Outcome::vhost_full;
  }
  if (umax && count_of(users_, user) >= *umax) {
    if (limit) *limit = *umax;
    return Outcome::user_full;
  }
  holders_[id] = {user, vhost};
  users_[user] += 1;
  vhosts_[vhost] += 1;
  return Outcome::taken;
}

bool ConnectionQuota::release(uint64_t id) {
  std::lock_guard l(mu_);
  auto it = holders_.find(id);
  if (it == holders_.end()) return false;
  drop(users_, it->second.first);
  drop(vhosts_, it->second.second);
  holders_.erase(it);
  return true;
}

size_t ConnectionQuota::of_user(const std::string& user) const {
  std::lock_guard l(mu_);
  return count_of(users_, user);
}

size_t ConnectionQuota::of_vhost(const std::string& vhost) const {
  std::lock_guard l(mu_);
  return count_of(vhosts_, vhost);
}

}  // namespace strata::server
