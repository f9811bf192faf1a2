// StreamHandle: the front door to one open stream of a node, for whoever
// serves it (the protocol server): appends, readers over both tiers, the
// commits to follow, and remote durability. It hides how the stream is made
// — its local log, its uploader, the node's manifest cache — so that a
// server never reaches into log/ or tier/ shells itself.
//
// A handle stays usable after its stream is released or the node closes:
// appends then fail with Errc::closed, remote waits end with the
// uploader's final error, readers fail (never hang).
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "log/hooks.h"
#include "log/offset_spec.h"
#include "log/stream_log.h"
#include "node/lag_bytes.h"
#include "node/stream_settings.h"
#include "tier/stream_reader.h"

namespace strata::tier {
class Uploader;
}

namespace strata::node {

class StreamHandle {
 public:
  // `uploader` null: not tiered (remote waits fail with unavailable).
  StreamHandle(std::string name, EffectiveSettings effective, std::shared_ptr<log::StreamLog> log,
               std::shared_ptr<tier::Uploader> uploader, tier::TierContext tier,
               std::shared_ptr<const std::atomic<bool>> disk_alarm = nullptr,
               std::shared_ptr<const std::atomic<int64_t>> lease_until = nullptr);
  ~StreamHandle();

  const std::string& name() const { return name_; }
  const EffectiveSettings& effective() const { return effective_; }
  ConfirmMode confirm() const { return effective_.confirm; }
  bool tiered() const { return uploader_ != nullptr; }

  // ---- appending (log/stream_log.h, append_entries) ----
  Result<log::AppendResult> append(const log::EntryBatch& batch);
  std::optional<uint64_t> writer_sequence(std::string_view ref) const;
  // Where the log stands; for messages that name the stream's files.
  uint64_t committed_next() const;
  const std::string& dir() const;
  // The largest chunk an append may make (log/log_options.h).
  uint64_t max_chunk_bytes() const;
  // The node's disk alarm is raised (node/disk_guard.h): publishes are to
  // be refused until it clears.
  bool disk_alarm() const { return disk_alarm_ && disk_alarm_->load(std::memory_order_acquire); }
  // The node's cluster lease has ended (Node::lease_fence): nothing may be
  // appended or confirmed locally — append() refuses with unavailable.
  // Read at the moment of the call (steady clock), so a node resumed after
  // a freeze past its lease sees it before acting on anything.
  bool lease_ended() const;

  // ---- commits ----
  // Called for each committed chunk, in offset order, on the writer's
  // thread (log/hooks.h: quick, must not block). Returns an id for
  // unsubscribe.
  uint64_t subscribe(std::function<void(const log::CommittedChunk&)> listener);
  void unsubscribe(uint64_t id);
  // The bytes past a consumer whose next offset is `from_offset` and whose
  // last chunk, if local, ended at `mark` (lag_bytes.h).
  LagBytes lag_bytes(const std::optional<LogMark>& mark, uint64_t from_offset) const;
  // First offset of the last committed chunk; nullopt when the log is empty.
  std::optional<uint64_t> last_chunk_id();
  // First offset of the local chunk holding `offset`; nullopt when the
  // local log does not hold it. May read the segment's index file.
  std::optional<uint64_t> chunk_id_of(uint64_t offset);
  // The oldest offset over both tiers: the persisted remote tier's first
  // when it holds data below the local log, else the local first offset.
  uint64_t first_offset() const;

  // ---- remote durability (tiered streams) ----
  // The persisted manifest's next offset: everything below it survives the
  // loss of this node's disk.
  uint64_t persisted_next() const;
  // Calls `done` once offsets below `offset` are persisted remotely, hurrying
  // the fragment cut while it waits (tier/uploader.h, await_remote); with
  // the uploader's error if it stops first; unavailable when not tiered.
  // `done` may run on any thread, before this returns.
  void await_remote(uint64_t offset, std::function<void(Status)> done);

  // ---- reading ----
  // A reader over both tiers. Just after the stream was opened (a takeover,
  // a restart) its uploader may still be loading the persisted manifest
  // that remote offsets need: a reader that needs them waits for it (at
  // most node_limits.h, kReaderAwaitsManifest) instead of failing.
  Result<std::unique_ptr<tier::StreamReader>> open_reader(const log::OffsetSpec& spec,
                                                          tier::StreamReaderOptions opts = {});

 private:
  const std::string name_;
  const EffectiveSettings effective_;
  const std::shared_ptr<log::StreamLog> log_;
  const std::shared_ptr<tier::Uploader> uploader_;
  const tier::TierContext tier_;
  const std::shared_ptr<const std::atomic<bool>> disk_alarm_;
  const std::shared_ptr<const std::atomic<int64_t>> lease_until_;
};

}  // namespace strata::node
