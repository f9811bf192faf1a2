#include "common/tail_damage.h"

#include <fmt/format.h>

namespace strata {

Error damage_at(std::string_view file, uint64_t position, std::string_view reason) {
  return Error(Errc::corrupt, fmt::format("{} position {}: {}", file, position, reason));
}

Status judge_tail_damage(const Error& damage, const std::optional<IntactAfter>& intact_after) {
  if (!intact_after) return Status::OK();
  return Error(Errc::corrupt,
               fmt::format("{}; {} follows at position {}, so the damage is not a "
                           "torn tail but corruption (nothing is cut)",
                           damage.message, intact_after->what, intact_after->position));
}

}  // namespace strata
