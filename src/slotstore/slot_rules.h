// The one rule deciding whether a WAL entry changes a slot. Recovery (WAL
// replay over the record copies) and compaction (folding a sealed WAL half
// into the record copies) both use it, so they cannot disagree.
#pragma once

#include <cstdint>

#include "slotstore/format.h"

namespace strata::slotstore {

enum class Verdict {
  apply,    // the entry changes the slot
  covered,  // the record copy already includes it (entry lsn <= record lsn)
  stale,    // written for another generation of the slot: never applied
};

// `rec_lsn` is the lsn of the record copy the slot state started from;
// `live`/`gen` describe the slot state after all earlier entries.
// A put that assigns the slot needs a free slot and a newer generation; any
// other put or erase needs the live slot of exactly its generation. So an
// entry written for a key that has since been deleted can never land on the
// key that reuses the slot.
inline Verdict judge(const format::Entry& e, uint64_t rec_lsn, bool live, uint32_t gen) {
  if (e.lsn <= rec_lsn) return Verdict::covered;
  if (e.type == format::EntryType::put && e.assign) {
    return !live && e.gen > gen ? Verdict::apply : Verdict::stale;
  }
  return live && e.gen == gen ? Verdict::apply : Verdict::stale;
}

}  // namespace strata::slotstore
