// DeletionCore: the order and the retries of deleting a stream, as a pure
// state machine (no I/O, no clock, no threads). Its shell
// (node/stream_deletion.h) runs each step the core asks for and feeds the
// outcome back; the core answers with the next effect. Every step is
// idempotent, so a run that starts over at `fence` (after a crash, or a
// failed run retried) converges.
//
//   fence ─► list ─┬─ keys listed ─► remove_objects ─► list ─► ...
//                  └─ nothing left ─► remove_local ─► remove_catalog ─► remove_marker ─► done
//
//   fence           catalog: raise the epoch (an old writer's next CAS is fenced)
//   list            the first page of keys under the stream's prefix
//   remove_objects  remove_many of that page (every key's outcome checked)
//   remove_local    the local log directory, durably
//   remove_catalog  the catalog entry (expected revision)
//   remove_marker   the manifest cache entry, then the deletion marker
//
// Failures: a transient one retries its step after a backoff delay
// (tier/backoff.h); a failed remove_objects retries from `list` (the
// listing is the truth of what is left). More than max_failures_in_a_row
// transient failures with no step succeeding in between, or one fatal
// failure, end the run with that error: the deletion stays pending and its
// marker in place, for a later run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/random.h"
#include "common/result.h"
#include "tier/backoff.h"

namespace strata::node {

enum class DeletionStep : uint8_t {
  fence,
  list,
  remove_objects,
  remove_local,
  remove_catalog,
  remove_marker,
};
std::string_view deletion_step_name(DeletionStep s);

enum class StepResult : uint8_t { ok, transient, fatal };

// What the shell reports for the step in flight.
struct StepOutcome {
  DeletionStep step = DeletionStep::fence;
  StepResult result = StepResult::ok;
  std::string error;              // when failed: what failed and where
  std::vector<std::string> keys;  // list, ok: the page (empty: nothing left)
  uint64_t removed = 0;           // remove_objects: keys removed, also on a partial failure
};

// Effects.
struct RunStep {
  DeletionStep step = DeletionStep::fence;
  int64_t delay_ms = 0;           // > 0: a retry, after this long
  std::vector<std::string> keys;  // remove_objects: what to remove
};
struct DeletionFinished {
  Status status;  // OK: the stream is gone; else why the run stopped
};
using DeletionEffect = std::variant<RunStep, DeletionFinished>;

struct DeletionCoreOptions {
  tier::BackoffPolicy backoff = tier::BackoffPolicy::transient();
  uint32_t max_failures_in_a_row = 12;
};

struct DeletionProgress {
  DeletionStep step = DeletionStep::fence;  // the step in flight (or the last one)
  bool finished = false;
  uint64_t objects_removed = 0;
  uint64_t listings = 0;
  uint64_t transient_failures = 0;  // in this run
  uint32_t failures_in_a_row = 0;
  std::string last_error;
};

class DeletionCore {
 public:
  DeletionCore(std::string stream, DeletionCoreOptions options, uint64_t seed);

  // The first effect: RunStep{fence}.
  DeletionEffect start();
  // The next effect after the outcome of the step in flight; nullopt when
  // the outcome is not for that step or the run has finished (ignored).
  std::optional<DeletionEffect> on(const StepOutcome& o);

  const DeletionProgress& progress() const { return p_; }

 private:
  DeletionEffect run(DeletionStep s, std::vector<std::string> keys = {});
  DeletionEffect finish(Status s);
  DeletionEffect failed(const StepOutcome& o);

  const std::string stream_;
  const DeletionCoreOptions opts_;
  Random rng_;
  DeletionProgress p_;
  bool started_ = false;
};

}  // namespace strata::node
