// fetch(voted_for) as the NIF answers it: atoms from the store's VoteAtoms,
// and the fill of that cache when a store opens.
#pragma once

#include <erl_nif.h>

#include "common/bytes.h"
#include "raftmeta/raft_meta.h"
#include "vote_atoms.h"

namespace strata::erl {

// `undefined`, a bare Name atom or {Name, Node} atoms (made on the first
// fetch of each vote and cached); as binaries, for the module's
// binary_to_atom/2 to report, if the text makes no atom. Lock-free.
ERL_NIF_TERM fetch_vote(ErlNifEnv* env, const raftmeta::RaftMeta& meta, VoteAtoms& cache,
                        BytesView id);

// Makes the atoms of every stored vote, so that the fetches of Ra's servers
// starting on a node that has just opened its store (each fetches its vote
// once) find them made. Runs at open, on its dirty I/O scheduler.
void fill_vote_atoms(ErlNifEnv* env, const raftmeta::RaftMeta& meta, VoteAtoms& cache);

}  // namespace strata::erl
