// One permission regex (configure, write or read) compiled once with PCRE2
// and matched as RabbitMQ's internal backend matches it
// (rabbit_auth_backend_internal:check_resource_access/4 in 3.10):
// re:run(Name, Regex, [{capture, none}]) — Erlang's `re` is PCRE, without
// the unicode option (bytes, not code points), unanchored (a match anywhere
// in the name counts unless the regex anchors itself), and an empty regex
// is replaced by "^$" first, so "" grants only the empty name.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"

// PCRE2's compiled pattern (pcre2_code_8), declared here so users of this
// header do not need pcre2.h.
struct pcre2_real_code_8;

namespace strata::auth {

class PermissionRegex {
 public:
  // invalid_argument with PCRE2's message and the offset it points at.
  static Result<PermissionRegex> compile(std::string_view pattern);

  // Thread-safe: the compiled code is read-only; the match data is one per
  // thread, made on the thread's first match and reused after.
  bool matches(std::string_view name) const;

  // The pattern as given (before "" became "^$"): what exports write back.
  const std::string& pattern() const { return pattern_; }

 private:
  struct CodeFree {
    void operator()(pcre2_real_code_8* code) const;
  };
  PermissionRegex(std::string pattern, pcre2_real_code_8* code)
      : pattern_(std::move(pattern)), code_(code) {}

  std::string pattern_;
  std::unique_ptr<pcre2_real_code_8, CodeFree> code_;
};

}  // namespace strata::auth
