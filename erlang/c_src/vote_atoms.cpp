#include "vote_atoms.h"

#include <cstring>
#include <string>

namespace strata::erl {

// Atom terms are stored as plain words.
static_assert(sizeof(ERL_NIF_TERM) == sizeof(uint64_t));

VoteAtoms::VoteAtoms(uint32_t entries, uint32_t nodes)
    : entries_(entries),
      nodes_(nodes),
      names_(new Slot[entries]),
      node_atoms_(new std::atomic<uint64_t>[nodes]()) {}

bool VoteAtoms::name(uint32_t entry, uint64_t version, ERL_NIF_TERM* atom) const {
  if (entry >= entries_) return false;
  const Slot& s = names_[entry];
  const uint64_t s1 = s.seq.load(std::memory_order_acquire);
  if (s1 & 1) return false;
  const uint64_t v = s.version.load(std::memory_order_relaxed);
  const uint64_t a = s.atom.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (s.seq.load(std::memory_order_relaxed) != s1 || v != version || a == 0) return false;
  *atom = ERL_NIF_TERM(a);
  return true;
}

void VoteAtoms::remember_name(uint32_t entry, uint64_t version, ERL_NIF_TERM atom) {
  if (entry >= entries_) return;
  Slot& s = names_[entry];
  uint64_t s1 = s.seq.load(std::memory_order_relaxed);
  // Another fill of this slot is running: it wins, this one is skipped.
  if ((s1 & 1) || !s.seq.compare_exchange_strong(s1, s1 + 1, std::memory_order_relaxed)) return;
  std::atomic_thread_fence(std::memory_order_release);
  s.version.store(version, std::memory_order_relaxed);
  s.atom.store(uint64_t(atom), std::memory_order_relaxed);
  s.seq.store(s1 + 2, std::memory_order_release);
}

bool VoteAtoms::node(uint32_t node, ERL_NIF_TERM* atom) const {
  if (node >= nodes_) return false;
  const uint64_t a = node_atoms_[node].load(std::memory_order_acquire);
  if (a == 0) return false;
  *atom = ERL_NIF_TERM(a);
  return true;
}

void VoteAtoms::remember_node(uint32_t node, ERL_NIF_TERM atom) {
  // Racing fills store the same atom (same text, same atom).
  if (node < nodes_) node_atoms_[node].store(uint64_t(atom), std::memory_order_release);
}

bool make_utf8_atom(ErlNifEnv* env, std::string_view text, ERL_NIF_TERM* atom) {
  // 131: the format's version; 118: ATOM_UTF8_EXT, a 16-bit length, the
  // text. (binary_to_term checks the text as binary_to_atom does.)
  if (text.size() > 0xFFFF) return false;
  std::string ext(4 + text.size(), '\0');
  ext[0] = char(131);
  ext[1] = char(118);
  ext[2] = char(text.size() >> 8);
  ext[3] = char(text.size() & 0xFF);
  std::memcpy(ext.data() + 4, text.data(), text.size());
  ERL_NIF_TERM t;
  const size_t used = enif_binary_to_term(env, reinterpret_cast<const unsigned char*>(ext.data()),
                                          ext.size(), &t, 0);
  if (used != ext.size() || !enif_is_atom(env, t)) return false;
  *atom = t;
  return true;
}

}  // namespace strata::erl
