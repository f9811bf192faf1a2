// FragmentAssembly: pure accumulator that turns the stream of committed
// chunks into fragments.
//
// The shell feeds every committed chunk in offset order (log::CommittedChunk:
// its header, the segment it lives in, its file position and its on-disk
// size) and gets a
// FragmentPlan back whenever a fragment is complete:
//   - size: when the fragment's chunk bytes reach `target_size` (the chunk
//     that crosses the threshold is included, so a fragment is never empty
//     and a chunk larger than the target is a fragment of its own);
//   - age: when `max_age_ms` has passed since the fragment's first chunk was
//     added (checked by add() and by tick(now)), so time-to-remote is bounded
//     for slow streams too. Age counts from when the chunk reached the
//     assembly, not from its writer timestamp: catching up on an old backlog
//     must still produce full-size fragments, not one fragment per chunk.
//   - hurry: while hurried (set_hurry(true): someone waits for the pending
//     chunks to be remote, a `confirm = remote` publish), when
//     `hurry_max_age_ms` has passed since the first chunk was added — the
//     short bound that keeps remote confirm latency bounded; without
//     waiters nothing changes;
//   - force: cut() (operator command, shutdown flush).
// `deadline()` tells the shell when to call tick() next.
//
// Chunks must be contiguous: each starts at the previous one's next offset.
// A gap, overlap or an on-disk size that disagrees with the header is an
// error value and changes nothing.
#pragma once

#include <cstdint>
#include <optional>

#include "common/result.h"
#include "log/chunk.h"
#include "log/hooks.h"
#include "tier/fragment.h"

namespace strata::tier {

struct AssemblyConfig {
  uint64_t target_size = 64ull << 20;  // bytes of chunks per fragment
  int64_t max_age_ms = 10'000;         // 0 disables the time bound
  // The age bound while hurried (remote confirms wait); 0: cut at once.
  int64_t hurry_max_age_ms = 100;
};

class FragmentAssembly {
 public:
  // `expected_first`: if set, the first chunk must start at this offset (the
  // manifest's next offset when resuming).
  explicit FragmentAssembly(AssemblyConfig cfg, std::optional<uint64_t> expected_first = {});

  // Adds a chunk observed at `now_ms` (as a commit observer or a chunk walk
  // of the log tells it, log/hooks.h); returns the completed fragment if
  // this chunk completed one (by size or by age).
  Result<std::optional<FragmentPlan>> add(const log::CommittedChunk& c, int64_t now_ms);

  // Cuts the pending fragment if it is older than max_age at `now_ms`.
  std::optional<FragmentPlan> tick(int64_t now_ms);

  // Cuts whatever is pending (nothing if empty).
  std::optional<FragmentPlan> cut();

  // When tick() will cut the pending fragment; none if empty or unbounded.
  std::optional<int64_t> deadline() const;

  // Hurried: the pending fragment is cut hurry_max_age_ms after its first
  // chunk (or max_age_ms if that is sooner). Takes effect at the next add()
  // or tick(); deadline() reflects it at once.
  void set_hurry(bool hurry) { hurry_ = hurry; }
  bool hurried() const { return hurry_; }

  bool empty() const { return plan_.meta.chunk_count == 0; }
  uint64_t pending_bytes() const { return plan_.meta.size; }
  uint32_t pending_chunks() const { return plan_.meta.chunk_count; }
  // Offset the next chunk must start at (none before the first chunk when no
  // expected_first was given).
  std::optional<uint64_t> next_offset() const { return next_; }

 private:
  AssemblyConfig cfg_;
  std::optional<uint64_t> next_;
  FragmentPlan plan_;
  int64_t opened_at_ms_ = 0;
  bool hurry_ = false;
};

}  // namespace strata::tier
