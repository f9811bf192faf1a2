// The atoms the NIF answers with and matches on, made once when the library
// loads. Atoms are global terms, valid in every environment.
#pragma once

#include <erl_nif.h>

namespace strata::erl {

struct Atoms {
  ERL_NIF_TERM ok;
  ERL_NIF_TERM error;
  ERL_NIF_TERM undefined;
  ERL_NIF_TERM closed;
  ERL_NIF_TERM timeout;
  ERL_NIF_TERM true_;
  ERL_NIF_TERM false_;
  // Ra's keys (ra_log_meta's key()).
  ERL_NIF_TERM current_term;
  ERL_NIF_TERM voted_for;
  ERL_NIF_TERM last_applied;
  // The tag of migration progress messages (open_options.h).
  ERL_NIF_TERM migration_progress;
  // What the owner is told when store_sync replies are ready to send
  // (sync_waiter.h).
  ERL_NIF_TERM strata_ra_replies;
  ERL_NIF_TERM done;
  ERL_NIF_TERM more;
};

extern Atoms atoms;

void make_atoms(ErlNifEnv* env);

}  // namespace strata::erl
