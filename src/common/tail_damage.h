// The one rule every log-structured file of strata keeps when its valid
// data ends before the file does: a torn tail or corruption?
//
// A crash can tear or lose only bytes written after the last completed
// fsync, and those are all at the end of what was being appended. So
// damage with nothing intact of the file's current sequence after it is a
// torn tail: the caller may cut it (or, read-only, ignore it). Damage
// followed by intact data of the current sequence that shows the damaged
// bytes were already durable when it was written cannot come from a torn
// write: cutting there could drop acknowledged data, so it is corruption
// and nothing is cut.
//
// What counts as such intact data is format specific and decided by the
// caller: for the log, an intact chunk past the damage
// (src/log/recovery.cpp; docs/formats/log-files.md, "Recovery (on open)");
// for the slotstore WAL, whose crash model lets later unsynced writes
// survive earlier ones, only data proving the damaged entries had been
// fsynced (src/slotstore/wal_replay.cpp, argued in docs/formats/slotstore.md,
// "Torn tail or damage"). Pure: no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace strata {

// Intact data of the file's current sequence found past the damage.
struct IntactAfter {
  uint64_t position = 0;  // file offset where it starts
  std::string what;       // e.g. "an intact chunk (offset 42)"
};

// Damage described where it is: Errc::corrupt, "<file> position <P>:
// <reason>" (the form the log's segment scan uses for its findings).
Error damage_at(std::string_view file, uint64_t position, std::string_view reason);

// `damage` names the file and the position where its valid data stops.
// OK if nothing intact follows (a torn tail: cut or ignore it); otherwise
// Errc::corrupt: the damage's message, then the intact data and its
// position.
Status judge_tail_damage(const Error& damage, const std::optional<IntactAfter>& intact_after);

}  // namespace strata
