// Writer (publisher) sequences as of the end of a stream's remote tier, for
// a node that starts a stream's local log after the remote tier (a takeover,
// a fresh disk): without them, a publisher that resends its unconfirmed
// messages to the new owner would have them stored twice.
//
// Chunks carry the sequences in their trailers (log/writer_sequences.h): the
// first chunk of every local segment a snapshot, later ones deltas, and
// fragments hold those chunks unchanged. So the fragments are read newest
// first until one holds a snapshot; the newest snapshot plus every later
// delta is the map. Deltas only raise sequences, so when no snapshot is
// found (budget spent, or the tier starts after it was dropped by
// retention) the deltas seen are still exact for every writer they name —
// and a writer that resends names the latest chunks, which are read first.
#pragma once

#include <cstdint>
#include <memory>

#include "log/writer_sequences.h"
#include "tier/manifest.h"
#include "tier/object_keys.h"
#include "tier/remote_reader.h"

namespace strata::tier {

struct RemoteWriters {
  log::WriterSequences writers;
  bool from_snapshot = false;  // a snapshot was found (else: deltas only)
  uint32_t fragments_read = 0;
  uint64_t bytes_read = 0;
};

// Reads fragments of `root` newest first, at most `max_bytes` of them (at
// least one). Errors (reads, corrupt chunks or trailers) name the object.
Result<RemoteWriters> remote_writer_sequences(const RemoteReaderDeps& deps, const ObjectKeys& keys,
                                              std::shared_ptr<const Manifest> root,
                                              uint64_t max_bytes);

}  // namespace strata::tier
