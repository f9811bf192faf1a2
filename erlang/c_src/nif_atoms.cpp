#include "nif_atoms.h"

namespace strata::erl {

Atoms atoms;

void make_atoms(ErlNifEnv* env) {
  atoms.ok = enif_make_atom(env, "ok");
  atoms.error = enif_make_atom(env, "error");
  atoms.undefined = enif_make_atom(env, "undefined");
  atoms.closed = enif_make_atom(env, "closed");
  atoms.timeout = enif_make_atom(env, "timeout");
  atoms.true_ = enif_make_atom(env, "true");
  atoms.false_ = enif_make_atom(env, "false");
  atoms.current_term = enif_make_atom(env, "current_term");
  atoms.voted_for = enif_make_atom(env, "voted_for");
  atoms.last_applied = enif_make_atom(env, "last_applied");
  atoms.migration_progress = enif_make_atom(env, "strata_ra_migration_progress");
  atoms.strata_ra_replies = enif_make_atom(env, "strata_ra_replies");
  atoms.done = enif_make_atom(env, "done");
  atoms.more = enif_make_atom(env, "more");
}

}  // namespace strata::erl
