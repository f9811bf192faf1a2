// ReplicaCore: the decisions of one replica subscription — a consumer of a
// stream served by a node that does not own it (docs/ARCHITECTURE.md,
// "Replica reads"). Pure: no I/O, no clock (time is an input), no threads;
// the shell (replica_feed.h) runs what it answers.
//
//   opening --persisted manifest--> remote --snapshot read--> forwarding
//      \--------(nothing remote for the spec)--------------->/     |
//                                  reconnecting <--link lost--------/
//                                      |  \--linked--> forwarding
//                                      \--limit passed--> given up
//
// Where reading starts (the persisted manifest [first, next), if any):
//   first       remote first when the remote tier holds data, else the
//               owner's `first`;
//   offset N    the remote chunk holding N when N < next (the oldest remote
//               chunk when N < first), else the owner's `offset N`;
//   timestamp T the first remote chunk with timestamp >= T; when none
//               qualifies, the owner's `timestamp T`;
//   last, next  the owner's (the newest data is on the owner).
// After the remote snapshot: the owner from the next offset not delivered
// (a chunk boundary). After a lost link: the same, or — when nothing was
// delivered yet — the spec the owner was asked for before.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "proto/commands.h"
#include "tier/remote_reader.h"

namespace strata::server {

// The persisted manifest's offsets [first, next).
struct RemoteRange {
  uint64_t first = 0;
  uint64_t next = 0;
  bool empty() const { return next <= first; }
};

struct ReplicaStep {
  enum class Kind : uint8_t { read_remote, forward, give_up };
  Kind kind = Kind::forward;
  tier::RemoteStart remote;  // read_remote: where the remote reader starts
  proto::OffsetSpec spec;    // forward: what the owner is subscribed at
};

class ReplicaCore {
 public:
  using Time = std::chrono::steady_clock::time_point;
  enum class Phase : uint8_t { opening, remote, forwarding, reconnecting, given_up };

  ReplicaCore(proto::OffsetSpec spec, std::chrono::milliseconds reconnect_limit)
      : spec_(spec), limit_(reconnect_limit) {}

  // The persisted manifest was read (nullopt: the stream has none yet).
  ReplicaStep start(std::optional<RemoteRange> remote);
  // The remote reader reached the end of its snapshot at `cursor`;
  // `newer`: the range of the manifest read again (nullopt: none).
  ReplicaStep remote_done(uint64_t cursor, std::optional<RemoteRange> newer);
  // What becomes of a chunk [first, next) from the remote tier or the owner.
  //   deliver   the consumer gets it;
  //   repeat    wholly below what was delivered (a reconnect resent it):
  //             dropped;
  //   diverged  it starts below the next offset expected but ends above:
  //             the owner's chunks no longer line up with those delivered,
  //             so offsets the consumer read now hold other records (a
  //             takeover dropped a tail the consumer had read — possible
  //             under confirm = local only, delivery_limit.h). Delivering
  //             it would send offsets backwards; the subscription ends.
  enum class Accept : uint8_t { deliver, repeat, diverged };
  Accept accept(uint64_t first, uint64_t next);
  // The owner answered the subscription.
  void linked();
  // The stream holds at least the offsets below `end` (a manifest read, a
  // chunk forwarded, the owner's committed chunk named in a Deliver).
  void known_up_to(uint64_t end);
  // Committed messages the consumer has not been sent: a lower bound, the
  // owner's newest chunks being known only as they are forwarded (nullopt
  // before the first chunk).
  std::optional<uint64_t> lag() const;
  // The link to the owner failed or the owner changed at `now`: connect
  // again (forward), or give up once reconnecting has lasted the limit.
  ReplicaStep link_lost(Time now);

  Phase phase() const { return phase_; }
  // The next offset not delivered; nullopt before the first chunk.
  std::optional<uint64_t> delivered_next() const { return next_; }
  uint64_t dropped_repeats() const { return repeats_; }
  uint64_t gaps() const { return gaps_; }
  uint64_t divergences() const { return divergences_; }

 private:
  ReplicaStep forward(proto::OffsetSpec spec);
  ReplicaStep forward_from_here();

  const proto::OffsetSpec spec_;
  const std::chrono::milliseconds limit_;
  Phase phase_ = Phase::opening;
  std::optional<uint64_t> next_;
  uint64_t known_end_ = 0;
  proto::OffsetSpec forwarded_;  // the spec the owner was last asked for
  std::optional<Time> lost_since_;
  uint64_t repeats_ = 0;
  uint64_t gaps_ = 0;
  uint64_t divergences_ = 0;
};

}  // namespace strata::server
