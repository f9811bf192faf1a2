// Osiris tracking: what a RabbitMQ stream remembers besides its messages —
// each publisher's last sequence (deduplication) and each consumer's stored
// offset (StoreOffset) — kept in the log itself: a user chunk's trailer
// holds the sequences its publishers reached (a delta), a tracking delta
// chunk the offsets stored since the last chunk, and the tracking snapshot
// chunk that opens a segment everything at that point. Layout:
// docs/formats/osiris-import.md.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "common/bytes.h"
#include "common/result.h"
#include "log/writer_sequences.h"

namespace strata::import {

struct OsirisTracking {
  log::WriterSequences sequences;                          // publisher reference → sequence
  std::map<std::string, uint64_t, std::less<>> offsets;    // consumer reference → offset
  std::map<std::string, int64_t, std::less<>> timestamps;  // reference → timestamp (unused by the
                                                           // stream protocol; counted, not kept)
};

enum class TrackingForm {
  delta,     // a user chunk's trailer or a tracking delta chunk's entry
  snapshot,  // a tracking snapshot chunk's entry (sequences carry their chunk id)
};

// Parses one tracking body. Errors: corrupt naming the byte of the body at
// fault (the caller adds the file and chunk) for an unknown entry type or an
// entry cut short.
Result<OsirisTracking> parse_osiris_tracking(BytesView body, TrackingForm form);

// `into` after `t`: a snapshot replaces everything, a delta sets the entries
// it names (a sequence only rises).
void apply_osiris_tracking(const OsirisTracking& t, TrackingForm form, OsirisTracking* into);

}  // namespace strata::import
