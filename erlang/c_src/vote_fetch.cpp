#include "vote_fetch.h"

#include "nif_atoms.h"
#include "slotstore/schema.h"
#include "term_codec.h"

namespace strata::erl {

namespace {

// The vote as binaries (Name or {Name, Node}) when its text makes no atom:
// the module's binary_to_atom/2 then fails as it would have.
ERL_NIF_TERM vote_as_binaries(ErlNifEnv* env, const raftmeta::RaftMeta& meta, BytesView id) {
  std::optional<raftmeta::FieldValue> v = meta.fetch(id, raftmeta::Field::voted_for);
  return v ? encode_value(env, *v) : atoms.undefined;
}

// The atoms of the vote of `id`: false if there is none (no server, no
// vote) or its text makes no atom (*no_atom set).
bool vote_terms(ErlNifEnv* env, const raftmeta::RaftMeta& meta, VoteAtoms& cache, BytesView id,
                raftmeta::VotedFor::Form* form, ERL_NIF_TERM* name, ERL_NIF_TERM* node,
                bool* no_atom) {
  std::optional<raftmeta::VoteRead> v = meta.fetch_vote(id, nullptr);
  if (!v || v->form == raftmeta::VotedFor::Form::none) return false;
  if (!cache.name(v->entry, v->version, name)) {
    // Read again with the name's bytes: the vote may have changed since,
    // and the atom is made (and cached) from the one read now.
    char buf[slotstore::kMaxBytesLen];  // any schema's longest name
    v = meta.fetch_vote(id, buf);
    if (!v || v->form == raftmeta::VotedFor::Form::none) return false;
    if (!make_utf8_atom(env, std::string_view(buf, v->name_len), name)) {
      *no_atom = true;
      return false;
    }
    cache.remember_name(v->entry, v->version, *name);
  }
  *form = v->form;
  if (v->form != raftmeta::VotedFor::Form::server_id || cache.node(v->node, node)) return true;
  if (!make_utf8_atom(env, meta.node_name(v->node), node)) {
    *no_atom = true;
    return false;
  }
  cache.remember_node(v->node, *node);
  return true;
}

}  // namespace

ERL_NIF_TERM fetch_vote(ErlNifEnv* env, const raftmeta::RaftMeta& meta, VoteAtoms& cache,
                        BytesView id) {
  raftmeta::VotedFor::Form form;
  ERL_NIF_TERM name, node;
  bool no_atom = false;
  if (!vote_terms(env, meta, cache, id, &form, &name, &node, &no_atom)) {
    return no_atom ? vote_as_binaries(env, meta, id) : atoms.undefined;
  }
  return form == raftmeta::VotedFor::Form::bare_name ? name : enif_make_tuple2(env, name, node);
}

void fill_vote_atoms(ErlNifEnv* env, const raftmeta::RaftMeta& meta, VoteAtoms& cache) {
  raftmeta::VotedFor::Form form;
  ERL_NIF_TERM name, node;
  bool no_atom = false;
  for (const auto& [id, m] : meta.list()) {
    if (m.voted_for.has_vote())
      (void)vote_terms(env, meta, cache, id, &form, &name, &node, &no_atom);
  }
}

}  // namespace strata::erl
