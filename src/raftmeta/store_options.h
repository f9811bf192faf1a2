// The files of a raftmeta directory and the capacity a new store gets.
#pragma once

#include <cstdint>
#include <string>

#include "raftmeta/meta_schema.h"

namespace strata::raftmeta {

// <dir>/meta.slots: the slotstore holding every server's metadata.
inline constexpr const char* kStoreFile = "meta.slots";
// <dir>/meta.slots.migrating: the store a migration builds; renamed to
// meta.slots once complete and fsynced, removed if found at start.
inline constexpr const char* kMigratingSuffix = ".migrating";
// <dir>/meta.dets: Ra's DETS file; renamed to meta.dets.migrated (never
// deleted) once the store that holds its rows is durably in place.
inline constexpr const char* kDetsFile = "meta.dets";
inline constexpr const char* kRetiredSuffix = ".migrated";

std::string store_path(const std::string& dir);
std::string migrating_path(const std::string& dir);
std::string dets_path(const std::string& dir);

// Capacity of a store, fixed when it is created. Exhausting it is an error
// value (store_full, string_table_full), logged; SlotStore::migrate can copy
// a store into a larger one.
struct StoreOptions {
  uint32_t capacity = 16384;       // servers that can exist at once (Ra: expected_count)
  uint32_t node_names = 256;       // distinct voted_for node names ever stored (string table)
  uint64_t wal_bytes = 16u << 20;  // both WAL halves together
  Bounds bounds;                   // id / vote name / vote node lengths
  // Memory a compaction may buffer before it writes (its RSS cost).
  size_t compaction_buffer_bytes = 1u << 20;
};

}  // namespace strata::raftmeta
