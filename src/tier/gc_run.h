// GC, the shell: lists the node's key prefix, reads the catalog and the
// persisted manifests, plans with the rules of gc_plan.h, re-reads the
// catalog, and deletes the candidates with remove_many.
//
// A stream whose catalog entry changed between the two reads (a persist
// landed, the stream was created, deleted or taken over) has its
// candidates skipped; such streams are then planned again on their own
// (their prefix listed again, their tree read again, the entry read before
// and after), up to `rounds` times, so that a stream persisting every few
// seconds is not skipped for ever by a listing of a big bucket that takes
// minutes. What is still skipped after the last round is reported.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "objstore/object_store.h"
#include "tier/gc_plan.h"
#include "tier/scrub_run.h"

namespace strata::tier {

struct GcOptions {
  std::string prefix;                 // the node's tiering.key_prefix
  int64_t grace_ms = 60 * 60 * 1000;  // rule 5 (and 6b) of gc_plan.h
  bool dry_run = false;               // plan and report; delete nothing
  int rounds = 3;                     // re-plans of streams whose entry changed
  // At most this many deletes in a run (0: no bound); the candidates past
  // it are counted in GcResult::left, for the next run.
  uint64_t max_deletes = 0;
  const Clock* clock = &system_clock();
  // Called with a line for a person between the steps of a long run.
  std::function<void(const std::string&)> progress;
};

struct GcFailure {
  GcObject object;
  std::string error;
};

struct GcResult {
  uint64_t listed = 0;                   // objects listed in the first round
  std::vector<GcObject> deleted;         // dry run: what would be deleted
  std::vector<GcFailure> failed;         // removes that failed (left for the next run)
  std::vector<GcObject> kept;            // kept for a reason other than being referenced
  std::vector<GcObject> skipped;         // candidates of streams whose entry kept changing
  std::map<GcVerdict, uint64_t> counts;  // the last plan of every object, by verdict
  std::map<std::string, std::string> unknown_trees;  // stream -> what could not be read
  int rounds = 0;                                    // rounds run (1 + re-plans)
  uint64_t left = 0;  // candidates not deleted for GcOptions::max_deletes
  // component -> stream name, for every stream the catalog held (the
  // objects say only their stream's component, gc_plan.h).
  std::map<std::string, std::string> names;
  // The stream of an object for a person: its name when the catalog held it
  // or the component decodes, else the component (a deleted stream's hash).
  std::string stream_of(const GcObject& o) const;
};

// Errors only when the listing or the catalog cannot be read (nothing is
// deleted then); failed removes are in the result.
Result<GcResult> run_gc(objstore::ObjectStore& store, const CatalogSource& catalog,
                        const GcOptions& opts);

}  // namespace strata::tier
