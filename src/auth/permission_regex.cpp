#define PCRE2_CODE_UNIT_WIDTH 8
#include "auth/permission_regex.h"

#include <pcre2.h>

namespace strata::auth {

namespace {
struct MatchDataFree {
  void operator()(pcre2_match_data* md) const { pcre2_match_data_free(md); }
};

// One ovector pair is all a yes/no match needs; a larger pattern's groups
// make pcre2_match return 0 ("ovector too small"), which still means a
// match. Thread-local so concurrent checks share nothing writable and a
// check allocates nothing after a thread's first.
pcre2_match_data* thread_match_data() {
  thread_local std::unique_ptr<pcre2_match_data, MatchDataFree> md(
      pcre2_match_data_create(1, nullptr));
  return md.get();
}
}  // namespace

void PermissionRegex::CodeFree::operator()(pcre2_real_code_8* code) const {
  pcre2_code_free(code);
}

Result<PermissionRegex> PermissionRegex::compile(std::string_view pattern) {
  // RabbitMQ matches "^$" where the stored regex is empty.
  std::string_view effective = pattern.empty() ? std::string_view("^$") : pattern;
  int err = 0;
  PCRE2_SIZE offset = 0;
  // Options 0: bytes (Erlang's re without `unicode`), unanchored.
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(effective.data()), effective.size(),
                                   0, &err, &offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    return Error(Errc::invalid_argument, "regex '" + std::string(pattern) + "' does not compile: " +
                                             reinterpret_cast<const char*>(msg) + " at offset " +
                                             std::to_string(offset));
  }
  // JIT where PCRE2 has it: checks run on every command. Without it (an
  // unsupported CPU) the interpreter gives the same answers.
  (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  return PermissionRegex(std::string(pattern), code);
}

bool PermissionRegex::matches(std::string_view name) const {
  int rc = pcre2_match(code_.get(), reinterpret_cast<PCRE2_SPTR>(name.data()), name.size(), 0, 0,
                       thread_match_data(), nullptr);
  // Negative: no match, or a match error (e.g. the match limit) — RabbitMQ's
  // re:run answers nomatch for the first; refusing on the second is safe.
  return rc >= 0;
}

}  // namespace strata::auth
