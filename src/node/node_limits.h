// The node layer's fixed limits, in one place: bounds and waits that are not
// settings (docs/CONFIGURATION.md lists those) but decide how the shells of
// node/ behave when something is slow or keeps changing. Each says why it
// has its value.
#pragma once

#include <chrono>
#include <cstdint>

namespace strata::node {

// A takeover raises the stream's catalog epoch by compare-and-set; another
// writer's persist between the read and the write makes it try again. Past
// this many attempts the entry is changing faster than it can be read
// (something is wrong), and the takeover fails instead of spinning.
inline constexpr int kTakeoverAttempts = 10;

// How much of the remote tier a node reads, newest first, looking for the
// publishers' sequences when its log starts after the remote tier (a local
// segment's worth at the default size).
inline constexpr uint64_t kWriterRecoveryBytes = 512ull << 20;

// A reader opened right after its stream (a takeover, a restart) waits this
// long for the uploader to load the persisted manifest the remote offsets
// need, instead of failing at once: longer than a healthy load takes.
inline constexpr std::chrono::milliseconds kReaderAwaitsManifest{5000};

// close() waits this long for hand-overs in progress to end (their
// uploaders are closed first, so they end promptly unless a log's close
// hangs).
inline constexpr std::chrono::seconds kCloseAwaitsHandoffs{30};

// Rounds of handlers run out on the stopping thread when a runtime stops: a
// closed shell's handlers only tidy up, so far fewer run; the bound is a
// safety net against a handler that keeps posting.
inline constexpr int kRuntimeDrainRounds = 1000;

// The blocking pool may grow past its size while jobs hang (abandoned at
// their deadline), up to twice its size and at least this many threads.
inline constexpr size_t kMinPoolThreadBound = 64;

// The node's orphan cleanup (node/orphan_sweep.h): runs at most this often
// however short tiering.orphan_grace_ms is (tests set a few seconds), at
// most this many deletes per run (a big backlog goes over several runs),
// and a run that has not ended by its deadline is abandoned (a listing of
// a huge bucket, a hung store).
inline constexpr int64_t kOrphanSweepMinIntervalMs = 1'000;
inline constexpr uint64_t kOrphanSweepMaxDeletes = 10'000;
inline constexpr int64_t kOrphanSweepDeadlineMs = 15 * 60'000;

}  // namespace strata::node
