// A read-only look at a raftmeta directory (strata raftmeta inspect): the
// store's capacity and counters and every server's values, without
// migrating, recovering into the file or writing anything.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/fs.h"
#include "common/result.h"
#include "raftmeta/meta_schema.h"
#include "raftmeta/server_meta.h"
#include "slotstore/slotstore.h"

namespace strata::raftmeta {

struct InspectReport {
  std::string dir;
  std::string store;     // path of the store file
  slotstore::Info info;  // capacity, usage, WAL (as recovered in memory)
  Bounds bounds;
  std::vector<std::pair<Bytes, ServerMeta>> servers;  // in slot order
  bool dets_present = false;                          // <dir>/meta.dets exists (migration pending)
  bool dets_retired = false;                          // <dir>/meta.dets.migrated exists
  bool migrating_leftover = false;                    // a temp store of an interrupted migration
};

// Errors: not_found if there is no store (naming a pending meta.dets if
// there is one), schema_mismatch if the file is not a raftmeta store, and
// the slotstore's open errors.
Result<InspectReport> inspect(FileSystem& fs, const std::string& dir);

}  // namespace strata::raftmeta
