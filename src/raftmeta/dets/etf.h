// Erlang external term format (ETF, version 131): the subset that DETS
// objects of Ra's meta table need, and a little more so that unexpected rows
// decode far enough to be named in an error.
//
// Decoded: integers (SMALL_INTEGER_EXT, INTEGER_EXT, SMALL_BIG_EXT,
// LARGE_BIG_EXT — any size; those beyond 64 bits are kept as magnitude bytes
// and rejected by the accessors that need a u64), atoms (ATOM_EXT and
// SMALL_ATOM_EXT as Latin-1, ATOM_UTF8_EXT and SMALL_ATOM_UTF8_EXT; all held
// as UTF-8), binaries (BINARY_EXT), tuples (SMALL_TUPLE_EXT,
// LARGE_TUPLE_EXT), lists (NIL_EXT, STRING_EXT, LIST_EXT with proper or
// improper tails).
//
// Every other tag — floats, maps, pids, references, funs, bit strings,
// compressed terms (tag 80: DETS stores term_to_binary/1 output, which is
// never compressed) — is an error naming the tag and its byte position. The
// format is described in docs/formats/meta-dets.md.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"

namespace strata::raftmeta::etf {

// The version byte that starts every term_to_binary/1 output.
inline constexpr uint8_t kVersionMagic = 131;

// Nesting deeper than this is rejected (bounds the decoder's recursion; Ra
// rows nest three levels).
inline constexpr int kMaxDepth = 64;

struct Term;

// Any Erlang integer. Values whose magnitude fits 64 bits are in
// `magnitude`; larger ones keep their magnitude as little-endian bytes in
// `big` (no zero bytes at the most significant end) and `magnitude` is 0.
struct Integer {
  bool negative = false;
  uint64_t magnitude = 0;
  Bytes big;

  bool fits_u64() const { return big.empty(); }
  // A non-negative value that fits 64 bits.
  bool is_u64() const { return fits_u64() && !negative; }
};

// An atom's name, as UTF-8 (Latin-1 atoms are converted).
struct Atom {
  std::string name;
};

struct Binary {
  Bytes bytes;
};

struct Tuple {
  std::vector<Term> elements;
};

// A list. `tail` is empty for a proper list (ends in []), else it holds the
// one improper tail term. NIL_EXT is a List with no elements and no tail;
// STRING_EXT decodes to a List of small Integers, as in Erlang.
struct List {
  std::vector<Term> elements;
  std::vector<Term> tail;
};

struct Term {
  std::variant<Integer, Atom, Binary, Tuple, List> value;
  // Byte position of this term's tag in the decoded input, offset by the
  // `base` given to decode() — the file offset, for error messages.
  uint64_t position = 0;

  const Integer* integer() const { return std::get_if<Integer>(&value); }
  const Atom* atom() const { return std::get_if<Atom>(&value); }
  const Binary* binary() const { return std::get_if<Binary>(&value); }
  const Tuple* tuple() const { return std::get_if<Tuple>(&value); }
  const List* list() const { return std::get_if<List>(&value); }

  bool is_atom(std::string_view name) const {
    const Atom* a = atom();
    return a != nullptr && a->name == name;
  }
  // "integer", "atom", "binary", "tuple" or "list", for messages.
  const char* kind_name() const;
};

// Decodes one complete term_to_binary/1 output: `in` must start with the
// version byte 131 and hold exactly one term with nothing after it.
// Positions in errors and in Term::position are `base` + offset into `in`;
// `what` names the input (a file path). Errors are Errc::corrupt, worded
// "<what>: byte <position>: <problem>".
Result<Term> decode(BytesView in, uint64_t base, std::string_view what);

// The term as Erlang's io:format("~w") prints it (atoms quoted where
// Erlang quotes them, binaries as <<1,2,3>>, lists as [..] including
// [H|T]). If the text would exceed `max_chars`, it is cut there and "..."
// appended. Non-ASCII atom characters are printed as UTF-8 inside quotes.
std::string to_string(const Term& t, size_t max_chars = SIZE_MAX);

// Appends a compact byte string to *out that is equal for two terms exactly
// when they are the same Erlang term (whatever tags encoded them: an atom
// written as ATOM_EXT and as SMALL_ATOM_UTF8_EXT is one atom). For key
// comparison; not a wire format.
void append_canonical(const Term& t, Bytes* out);

// The name of an ETF tag ("MAP_EXT", "NEW_FLOAT_EXT", ...) or "unknown".
const char* tag_name(uint8_t tag);

}  // namespace strata::raftmeta::etf
