#include "catalog/catalog.h"

#include <fmt/format.h>

namespace strata::catalog {

// Only a backend that shares keys with cluster ownership (etcd) can check
// an owner key in the same step as the entry.
Result<PutResult> Catalog::bump_epoch_if_owner(std::string_view stream, uint64_t, uint64_t,
                                               const OwnerCondition& owner) {
  return Error(Errc::unsupported,
               fmt::format("catalog {}: a takeover of stream {} guarded by owner key {} needs the "
                           "etcd backend",
                           describe(), stream, owner.key));
}

Result<StreamEntry> Catalog::create_with_settings(std::string_view stream, uint64_t,
                                                  std::string_view) {
  return Error(Errc::unsupported,
               fmt::format("catalog {}: stream {}: this backend keeps no stream settings (the "
                           "stream's settings file does)",
                           describe(), stream));
}

Status Catalog::update_settings(std::string_view stream, std::string_view) {
  return Error(Errc::unsupported,
               fmt::format("catalog {}: stream {}: this backend keeps no stream settings (the "
                           "stream's settings file does)",
                           describe(), stream));
}

Result<std::optional<std::string>> Catalog::settings(std::string_view stream) {
  return Error(Errc::unsupported,
               fmt::format("catalog {}: stream {}: this backend keeps no stream settings (the "
                           "stream's settings file does)",
                           describe(), stream));
}

}  // namespace strata::catalog
