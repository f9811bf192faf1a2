// Appending osiris entries as they came off the wire. Stand-in for the
// log's own StreamLog::append_entries (which stores entries verbatim,
// sub-batches included, with the writer's reference in the chunk trailer)
// until it lands: simple entries are appended as records — byte-identical
// chunk data, since the log frames records exactly like osiris simple
// entries; sub-batch entries are refused.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/result.h"
#include "log/stream_log.h"

namespace strata::server {

struct OsirisBatch {
  BytesView entries;  // osiris entries back to back
  uint16_t num_entries = 0;
  uint32_t num_records = 0;
  std::string_view writer_ref;
  uint64_t writer_seq = 0;
};

Status append_osiris(log::StreamLog& log, const OsirisBatch& b);

}  // namespace strata::server
