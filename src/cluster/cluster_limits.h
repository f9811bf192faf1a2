// The cluster layer's fixed limits, in one place: the ratios that derive
// ownership's unset timings from the lease TTL, and the bounds and
// deadlines of the ownership shell's tasks that are not settings
// (docs/CONFIGURATION.md lists those). Each says why it has its value.
// Pure constants: the core (ownership_core.h) includes this too.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace strata::cluster {

// ---- timings derived from the lease TTL (OwnershipTiming::resolved) ----

// Keepalives per TTL when keepalive_interval_ms is unset: three chances to
// renew before the lease could expire, so one lost keepalive (or two) does
// not stop the node's streams.
inline constexpr int64_t kKeepalivesPerTtl = 3;
// Keepalives that may be in flight at once. A keepalive that reached an
// etcd member whose leader just died waits there until a new leader is
// elected, then renews the lease; it is given until the node would give
// the lease up, and meanwhile the next keepalives go out beside it, so a
// renewal sent after the election does not queue behind one sent before.
// One per keepalive interval for a TTL's worth, and no more.
inline constexpr int kMaxKeepalivesInFlight = int(kKeepalivesPerTtl);
// The safety margin, when unset, is this fraction of the TTL (1/5): the
// node stops writing this long before etcd could expire its lease, room
// for clock-rate differences and a keepalive that etcd received late.
inline constexpr int64_t kTtlPerSafetyMargin = 5;
// A node must have been registered this many TTLs before streams are handed
// over to it, when rebalance_after_ms is unset: a node that flickers (a
// restart, a lease lost once) does not pull streams back and forth.
inline constexpr int64_t kRebalanceAfterTtls = 2;
// An election counts a node as one of the cluster's for this many lease
// TTLs after it was last seen registered (OwnershipTiming::member_memory_ms):
// long enough to span an etcd outage that expired every lease, so that the
// first nodes back do not elect among themselves what a majority of all
// confirmed.
inline constexpr int64_t kMemberMemoryTtls = 10;

// ---- the ownership shell (ownership.cpp) ----

// Node ids are etcd key segments and appear in logs: short and printable.
inline constexpr size_t kMaxNodeIdBytes = 128;
// etcd grants leases in whole seconds: the TTL must be a multiple of this,
// and at least one of it.
inline constexpr int64_t kLeaseTtlUnitMs = 1000;

// The shell's clock-check tick, when tick_ms is unset: this many ticks per
// TTL (a frozen process notices within 1/20 of its TTL after it thaws, far
// inside the safety margin of 1/5) ...
inline constexpr int64_t kTicksPerTtl = 20;
// ... but never more often than this: a tick only re-checks the clock.
inline constexpr std::chrono::milliseconds kMinTick{10};

// An etcd call (grant, keepalive, register, revoke, acquire) may take up to
// the keepalive interval (a keepalive answered after the next one is due is
// as good as lost), but never less than this: a loopback etcd answers well
// within it, a loaded one may not within a few ms.
inline constexpr std::chrono::milliseconds kMinCallDeadline{200};
// Reading the whole namespace before watching it: streams, nodes, owners
// and consumer offsets of a large cluster, so longer than one call.
inline constexpr std::chrono::milliseconds kNamespaceReadDeadline{10000};
// Opening a won stream: a catalog takeover, a root GET and recovering the
// writers' sequences from up to node::kWriterRecoveryBytes of fragments.
inline constexpr std::chrono::milliseconds kOpenDeadline{30000};
// Deleting a stream asked for through the catalog: its objects too, which
// for a long stream are many deletes.
inline constexpr std::chrono::milliseconds kRemoveDeadline{120000};
// A hand-off's task may take its persist timeout (a setting), one etcd
// call to release the owner key, and this much more to close the stream.
inline constexpr std::chrono::milliseconds kHandoffCloseSlack{5000};

// The shell's pool of blocking etcd calls and opens: a few run at once in
// steady state (a keepalive, an acquire or two) ...
inline constexpr size_t kTaskPoolThreads = 4;
// ... a node joining a large cluster acquires and opens many streams at
// once, and a hung etcd call holds its thread past its deadline: the pool
// may grow to this many.
inline constexpr size_t kTaskPoolMaxThreads = 32;
// At stop, calls still running get this long before the pool gives up on
// them (they are abandoned; their late results go nowhere).
inline constexpr std::chrono::milliseconds kTaskPoolStopGrace{1000};

}  // namespace strata::cluster
