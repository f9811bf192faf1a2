// Conversions between the terms strata_ra_nif exchanges with Erlang and
// raftmeta's types.
//
// The Erlang side (strata_ra_log_meta.erl) turns atoms into UTF-8 binaries
// before calling the NIF (OTP 25's NIF API reads and makes Latin-1 atoms
// only; fetch answers a vote with atoms made through the external term
// format instead, vote_atoms.h), so the NIF sees:
//   server id     binary (Ra's ra_uid())
//   key           current_term | voted_for | last_applied
//   term/applied  non-negative integer < 2^64
//   voted_for     undefined | Name :: binary() | {Name :: binary(), Node :: binary()}
//                 (no vote | legacy bare name | {Name, Node} server id)
// Errors are `closed` (the store was closed) or {Code, Dir, Message}: Code is
// raftmeta's error code as an atom (store_full, fail_stopped, ...), Dir the
// store's data directory and Message what failed, both binaries.
#pragma once

#include <erl_nif.h>

#include <string>
#include <string_view>

#include "common/bytes.h"
#include "common/result.h"
#include "raftmeta/server_meta.h"

namespace strata::erl {

// false if `t` is not one of Ra's three keys.
bool decode_field(ERL_NIF_TERM t, raftmeta::Field* f);
// false if `t` is not a binary. The view is valid during the NIF call.
bool decode_id(ErlNifEnv* env, ERL_NIF_TERM t, BytesView* id);
// false if `t` has the wrong type for field `f`.
bool decode_value(ErlNifEnv* env, raftmeta::Field f, ERL_NIF_TERM t, raftmeta::FieldValue* v);

ERL_NIF_TERM encode_value(ErlNifEnv* env, const raftmeta::FieldValue& v);
ERL_NIF_TERM make_binary(ErlNifEnv* env, std::string_view s);
// `closed`, or {Code, Dir, Message}.
ERL_NIF_TERM encode_error(ErlNifEnv* env, const Error& e, const std::string& dir);
// {error, encode_error(...)}.
ERL_NIF_TERM error_tuple(ErlNifEnv* env, const Error& e, const std::string& dir);
// ok, or {error, ...}.
ERL_NIF_TERM status_term(ErlNifEnv* env, const Status& s, const std::string& dir);

}  // namespace strata::erl
