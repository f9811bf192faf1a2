#include "term_codec.h"

#include <cstring>

#include "nif_atoms.h"

namespace strata::erl {

namespace {

bool binary_view(ErlNifEnv* env, ERL_NIF_TERM t, std::string_view* out) {
  ErlNifBinary b;
  if (!enif_inspect_binary(env, t, &b)) return false;
  *out = std::string_view(reinterpret_cast<const char*>(b.data), b.size);
  return true;
}

}  // namespace

bool decode_field(ERL_NIF_TERM t, raftmeta::Field* f) {
  if (enif_is_identical(t, atoms.current_term)) {
    *f = raftmeta::Field::current_term;
  } else if (enif_is_identical(t, atoms.voted_for)) {
    *f = raftmeta::Field::voted_for;
  } else if (enif_is_identical(t, atoms.last_applied)) {
    *f = raftmeta::Field::last_applied;
  } else {
    return false;
  }
  return true;
}

bool decode_id(ErlNifEnv* env, ERL_NIF_TERM t, BytesView* id) {
  return binary_view(env, t, id);
}

bool decode_value(ErlNifEnv* env, raftmeta::Field f, ERL_NIF_TERM t, raftmeta::FieldValue* v) {
  if (f != raftmeta::Field::voted_for) {
    ErlNifUInt64 n;
    if (!enif_get_uint64(env, t, &n)) return false;
    *v = uint64_t(n);
    return true;
  }
  if (enif_is_identical(t, atoms.undefined)) {
    *v = raftmeta::VotedFor::none();
    return true;
  }
  std::string_view name, node;
  if (binary_view(env, t, &name)) {
    *v = raftmeta::VotedFor::bare(std::string(name));
    return true;
  }
  int arity;
  const ERL_NIF_TERM* elems;
  if (!enif_get_tuple(env, t, &arity, &elems) || arity != 2) return false;
  if (!binary_view(env, elems[0], &name) || !binary_view(env, elems[1], &node)) return false;
  *v = raftmeta::VotedFor::server(std::string(name), std::string(node));
  return true;
}

ERL_NIF_TERM make_binary(ErlNifEnv* env, std::string_view s) {
  ERL_NIF_TERM t;
  unsigned char* data = enif_make_new_binary(env, s.size(), &t);
  if (!s.empty()) std::memcpy(data, s.data(), s.size());
  return t;
}

ERL_NIF_TERM encode_value(ErlNifEnv* env, const raftmeta::FieldValue& v) {
  if (const uint64_t* n = std::get_if<uint64_t>(&v)) return enif_make_uint64(env, *n);
  const auto& vote = std::get<raftmeta::VotedFor>(v);
  switch (vote.form) {
    case raftmeta::VotedFor::Form::none:
      return atoms.undefined;
    case raftmeta::VotedFor::Form::bare_name:
      return make_binary(env, vote.name);
    case raftmeta::VotedFor::Form::server_id:
      return enif_make_tuple2(env, make_binary(env, vote.name), make_binary(env, vote.node));
  }
  return atoms.undefined;
}

ERL_NIF_TERM encode_error(ErlNifEnv* env, const Error& e, const std::string& dir) {
  if (e.code == Errc::closed) return atoms.closed;
  const std::string_view code = errc_name(e.code);
  return enif_make_tuple3(env, enif_make_atom_len(env, code.data(), code.size()),
                          make_binary(env, dir), make_binary(env, e.message));
}

ERL_NIF_TERM error_tuple(ErlNifEnv* env, const Error& e, const std::string& dir) {
  return enif_make_tuple2(env, atoms.error, encode_error(env, e, dir));
}

ERL_NIF_TERM status_term(ErlNifEnv* env, const Status& s, const std::string& dir) {
  return s.ok() ? atoms.ok : error_tuple(env, s.error(), dir);
}

}  // namespace strata::erl
