#include "server/access_policy.h"

namespace strata::server {

bool AccessPolicy::permitted(const std::string& user, const std::string& vhost, Permission p,
                             const std::string& resource) const {
  return current()->check(user, vhost, p, resource);
}

}  // namespace strata::server
