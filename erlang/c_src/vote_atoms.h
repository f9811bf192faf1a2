// VoteAtoms: the atoms fetch(voted_for) answers with, made once per vote and
// kept per store.
//
// Ra's fetch returns a vote as atoms ({Name, Node} or a bare Name). Making
// them on every fetch cost twice the read itself: the module's two
// binary_to_atom/2 added 377 ns to a 171 ns NIF read (an ETS read is 175
// ns), and OTP 25's enif_make_atom_len was slower still (and Latin-1 only).
// Atoms are immediates, valid in every environment for the life of the
// runtime, so the cache holds plain words, no environment:
//  - the name atom of each server entry, tagged with the version of the
//    vote it was made from (raftmeta's VoteRead::version changes with every
//    vote and is never reused, so a matching tag is that vote's name);
//  - the atom of each node id (a node id always names the same node).
// Readers (fetch, on every scheduler at once) take no lock: an entry's slot
// is a sequence lock of three words, and a reader that meets a write in
// progress just makes the atom itself. A fill that finds the slot being
// written skips it.
#pragma once

#include <erl_nif.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>

namespace strata::erl {

class VoteAtoms {
 public:
  VoteAtoms(uint32_t entries, uint32_t nodes);
  VoteAtoms(const VoteAtoms&) = delete;
  VoteAtoms& operator=(const VoteAtoms&) = delete;

  // The name atom cached for `entry` if it was made from vote `version`.
  bool name(uint32_t entry, uint64_t version, ERL_NIF_TERM* atom) const;
  void remember_name(uint32_t entry, uint64_t version, ERL_NIF_TERM atom);
  bool node(uint32_t node, ERL_NIF_TERM* atom) const;
  void remember_node(uint32_t node, ERL_NIF_TERM atom);

 private:
  struct Slot {
    std::atomic<uint64_t> seq{0};  // odd while being written
    std::atomic<uint64_t> version{0};
    std::atomic<uint64_t> atom{0};
  };
  const uint32_t entries_;
  const uint32_t nodes_;
  std::unique_ptr<Slot[]> names_;
  std::unique_ptr<std::atomic<uint64_t>[]> node_atoms_;  // 0: not made yet
};

// The atom with UTF-8 `text`, as binary_to_atom(Text, utf8) makes it
// (OTP 25's enif_make_atom_len takes Latin-1 only): decoded from the
// external term format. false if it is no atom (not UTF-8, over 255
// characters).
bool make_utf8_atom(ErlNifEnv* env, std::string_view text, ERL_NIF_TERM* atom);

}  // namespace strata::erl
