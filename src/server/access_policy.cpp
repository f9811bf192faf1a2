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

}  // namespace strata::server
