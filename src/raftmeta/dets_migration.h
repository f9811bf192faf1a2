// Migration of Ra's meta.dets into a raftmeta store, crash-atomically.
//
// Procedure (docs/formats/raftmeta.md, "Migration from meta.dets", has the
// crash argument):
//  1. remove a leftover <dir>/meta.slots.migrating (and slotstore's own
//     .creating temp) from an attempt that crashed;
//  2. read and validate the whole DETS file (DetsReader: structure, every
//     row's shape) — any problem fails here, naming the file, the byte
//     position and what is wrong, before anything is written;
//  3. build the store in meta.slots.migrating (capacity raised to fit the
//     rows if needed), write every row, read every row back and compare,
//     close it (which fsyncs);
//  4. rename it to meta.slots and fsync the directory;
//  5. rename meta.dets to meta.dets.migrated and fsync its directory.
// A crash before 4 is durable leaves no store (the next start migrates
// again from the untouched meta.dets); after it, a complete store. The
// source is only ever read, and renamed (never deleted) at the very end.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/fs.h"
#include "common/result.h"
#include "raftmeta/store_options.h"

namespace strata::raftmeta {

struct MigrationReport {
  enum class Action {
    none,          // no DETS file, or the store exists and no DETS file: nothing to do
    migrated,      // rows copied into a new store, DETS file retired
    retired_only,  // a crash had left the complete store and the DETS file: retired it
  };
  Action action = Action::none;
  std::string source;                          // the DETS file
  uint64_t rows = 0;                           // rows in the DETS file
  uint64_t source_bytes = 0;                   // its size
  bool source_closed_properly = true;          // false: Ra's node had crashed with it open
  StoreOptions created;                        // capacity of the store created (migrated)
  std::vector<std::string> removed_leftovers;  // temp files of an earlier attempt
};
std::string_view action_name(MigrationReport::Action a);

// Progress of a migration: phase ("sizing", "writing", "verifying"), rows
// done, rows in total. Called every few thousand rows and at each phase end.
using MigrationProgress =
    std::function<void(std::string_view phase, uint64_t done, uint64_t total)>;

// Brings `dir` to "store present, DETS file retired", given the DETS file
// `dets` (normally <dir>/meta.dets):
//  - store absent, `dets` absent: nothing (action none);
//  - store absent, `dets` present: migrates it (action migrated); the store
//    gets `opt`'s capacity, raised where the DETS rows need more (more rows
//    than capacity, longer ids/names, more node names);
//  - store present, `dets` absent: nothing;
//  - store present, `dets` present: a crash between steps 4 and 5, if the
//    store holds exactly the rows of `dets`: retires it (retired_only).
//    If they differ, the store was not made from this file (e.g. an older
//    Ra ran after the migration and wrote a new meta.dets): using either
//    one silently could bring back an old term or vote, so this fails with
//    Errc::conflict naming the first difference and touches nothing.
// Errors name the file and the problem; the DETS file is never modified.
// Rows whose uid is empty or longer than 255 bytes (a slotstore key's
// bound) are refused with schema_mismatch naming the row.
Result<MigrationReport> migrate_dets(FileSystem& fs, const std::string& dets,
                                     const std::string& dir, const StoreOptions& opt,
                                     const MigrationProgress& progress = nullptr);

// Read-only check: OK iff the store at `store` holds exactly the servers and
// values of the DETS file `dets`; conflict naming the first difference
// otherwise (or the error reading either).
Status compare_with_dets(FileSystem& fs, const std::string& dets, const std::string& store);

}  // namespace strata::raftmeta
