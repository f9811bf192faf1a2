#include "server/access_policy.h"

namespace strata::server {

std::string_view permission_name(Permission p) {
  switch (p) {
    case Permission::configure:
      return "configure";
    case Permission::write:
      return "write";
    case Permission::read:
      return "read";
  }
  return "?";
}

bool AccessPolicy::permitted(const std::string& user, const std::string& vhost, Permission p,
                             const std::string& resource) const {
  auth::Op op = auth::Op::read;
  switch (p) {
    case Permission::configure:
      op = auth::Op::configure;
      break;
    case Permission::write:
      op = auth::Op::write;
      break;
    case Permission::read:
      op = auth::Op::read;
      break;
  }
  return current()->check(user, vhost, op, resource);
}

}  // namespace strata::server
