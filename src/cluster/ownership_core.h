// OwnershipCore: the pure decisions of cluster stream ownership — when to
// grant, keep alive and give up the node's etcd lease, which streams to try
// to own, and when to start or stop serving one. No I/O, no clock, no
// threads: the shell (cluster/ownership.h) feeds it events with the current
// monotonic time and runs the effects it returns.
//
// The lease. Each node holds one etcd lease (TTL `lease_ttl_ms`), kept alive
// every `keepalive_interval_ms`, and registers <ns>/nodes/<id> on it. The
// node's own clock decides whether it may still write: the lease can only
// have expired in etcd once TTL has passed since the last keepalive that
// succeeded was *sent* (etcd renews from when it receives it, which is
// later). So once `lease_ttl_ms - safety_margin_ms` has passed since then,
// the core stops every stream at once (effect::Close), before etcd can
// expire the lease and another node bump the epoch, then asks for a fresh
// lease and competes again. The check runs on every event, so a process
// frozen past its lease (SIGSTOP) stops on the first event after it thaws,
// whatever that event is. A keepalive answered "lease not found" stops at
// once too.
//
// Owning a stream. Owner key <ns>/owners/<stream> = node id, attached to
// the owner's lease, created by a txn on create_revision == 0 (exactly one
// node wins). Placement: rendezvous hashing of (stream, node id) over the
// live (registered) nodes; a node tries to acquire an ownerless stream when
// it ranks first, or — so that a stream never stays ownerless while its
// first choice is down or slow — once the stream has been ownerless for
// `acquire_grace_ms`. A won stream is opened (the shell bumps its epoch and
// recovers it); a stream whose owner key the node sees gone or held by
// someone else (after its own acquire's revision) is closed; if its open was
// still running, the stream is not acquired again before that open is back
// (so its result is never taken for a later open's). A served
// stream whose writer was fenced while the owner key is still ours (another
// node's takeover that raced its lease's end) is closed and opened again:
// the fresh takeover raises the epoch over the stale one, so the stream
// never stays served without an uploader.
//
// Taking streams back. A node that gave its lease up because it could not
// renew it (etcd out of its reach: every node stops) may find, once it has
// a fresh lease, its owner keys still in etcd on the old lease (etcd
// extends leases when a new raft leader is elected after an outage, and
// the revoke sent at the fence could not get through); so may a node
// restarted (kill -9) before its old lease expired. Those streams are
// still its own — no other node could have taken them, node ids being
// unique — so it moves each key to the new lease at once (effect::Acquire
// with from_lease) and opens the stream again; the catalog's epoch is then
// still its uploader's, so the unuploaded tail on its disk is kept
// (node/stream_open.cpp). Nothing the outage or the restart interrupted is
// lost, and no other node competes for those streams.
//
// Handing streams over (rebalancing). Placement decides who acquires an
// ownerless stream; a node that joins later would otherwise only ever get
// new or orphaned streams. So a node serving a stream whose first choice is
// another live node — registered for `rebalance_after_ms`, long enough to
// be more than a flicker — hands it over (effect::HandOff): the shell
// stops taking writes, persists everything committed (nothing is lost,
// whatever the confirm mode), closes the stream and deletes its owner key
// only if it is still this node's; the first choice then acquires it at
// once. One hand-off at a time per node, so a joining node's streams move
// gradually. A hand-off that fails before the stream was closed leaves it
// served (tried again after `rebalance_after_ms`); one that closed it but
// could not delete the key opens it again (a takeover under our own key).
//
// Electing the most complete copy (OwnershipTiming::elect_most_complete,
// on with cluster.replica_copies): instead of its first choice, an
// ownerless stream goes to the live node whose disk holds the most of it
// past the remote tier (cluster/election.h). Every live node stands
// (effect::Stand posts its candidacy); the best one acquires as soon as
// every live node has stood, or after `acquire_grace_ms` once a majority
// of them has; after twice that, the runner-up, if a majority stood
// besides the best (a best node that hangs must not keep the stream
// ownerless). Never on fewer: see cluster/election.h.
//
// Deleting from any node. A node asked to delete a stream it does not serve
// requests it in the catalog (<ns>/deletions/<stream> = its id): the node
// serving the stream deletes it (effect::Remove); an ownerless stream is
// acquired at once by the node that asked, which then deletes it. The
// catalog's remove takes the request and the owner key with the entry.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "cluster/election.h"

namespace strata::cluster {

struct OwnershipTiming {
  int64_t lease_ttl_ms = 5000;
  int64_t keepalive_interval_ms = 0;  // 0: lease_ttl_ms / 3
  int64_t safety_margin_ms = 0;       // 0: lease_ttl_ms / 5
  int64_t acquire_grace_ms = 0;       // 0: lease_ttl_ms
  int64_t retry_ms = 250;             // after a failed grant, keepalive, acquire or open
  // A node must be registered this long before streams are handed over
  // to it; 0: 2 x lease_ttl_ms; negative: streams are never handed over.
  int64_t rebalance_after_ms = 0;
  // Ownerless streams go to the most complete copy, not the first choice.
  bool elect_most_complete = false;
  // How long a node seen registered still counts among the nodes a
  // majority of which must stand in an election; 0: kMemberMemoryTtls x
  // lease_ttl_ms.
  int64_t member_memory_ms = 0;

  // With the defaults filled in.
  OwnershipTiming resolved() const;
};

// Rendezvous score of (stream, node): the node with the highest score is
// the stream's first choice. Stable across processes and versions (FNV-1a
// 64 mixed by splitmix64), so every node ranks alike.
uint64_t rendezvous_score(const std::string& stream, const std::string& node_id);
// The live node ranking first for `stream` ("" when there is none).
std::string first_choice(const std::string& stream, const std::vector<std::string>& nodes);

struct OwnerRecord {
  std::string node_id;
  int64_t lease = 0;
};

namespace ev {
struct Tick {};
struct LeaseGranted {
  int64_t lease = 0;
};
struct LeaseFailed {
  std::string why;
};
struct KeepaliveDone {
  int64_t lease = 0;
  int64_t sent_ms = 0;  // the Keepalive effect's sent_ms
  bool ok = false;
  bool lease_gone = false;  // etcd says the lease expired or was revoked
  std::string why;
};
struct Registered {
  int64_t lease = 0;
  bool ok = false;
  std::string why;
};
// What the shell's watch holds now (full snapshots; revision of the view).
struct View {
  int64_t revision = 0;
  std::vector<std::string> nodes;             // registered node ids
  std::map<std::string, OwnerRecord> owners;  // stream -> owner
  std::vector<std::string> streams;           // streams in the catalog
  // Deletions requested through the catalog (<ns>/deletions/<stream>), by
  // the node that asked: its owner deletes the stream.
  std::map<std::string, std::string> deletions;
  // Candidacies for ownerless streams (<ns>/candidates/<node>/<stream>):
  // stream -> node -> what it stood with.
  std::map<std::string, std::map<std::string, Candidacy>> candidacies;
};
struct AcquireDone {
  std::string stream;
  int64_t lease = 0;
  bool won = false;
  int64_t revision = 0;  // of the winning txn
  std::string why;       // set when the attempt failed (neither won nor lost)
};
struct OpenDone {
  std::string stream;
  int64_t lease = 0;
  bool ok = false;
  std::string why;
};
// The deletion of a served stream (effect::Remove) ended.
struct RemoveDone {
  std::string stream;
  int64_t lease = 0;
  bool ok = false;
  std::string why;
};
// A hand-off (effect::HandOff) ended: `closed` whether the stream was
// closed here; `ok` whether its owner key was released too.
struct HandoffDone {
  std::string stream;
  int64_t lease = 0;
  bool ok = false;
  bool closed = false;
  std::string why;
};
// The stream's uploader stopped because another writer raised the epoch
// while this node, under `lease`, still served it (a stale takeover).
struct WriterFenced {
  std::string stream;
  int64_t lease = 0;
  std::string why;
};
// A Stand or Withdraw ended.
struct CandidacyDone {
  std::string stream;
  int64_t lease = 0;
  bool stood = false;  // a Stand's (else a Withdraw's)
  bool ok = false;
  std::string why;
};
}  // namespace ev

using Event = std::variant<ev::Tick, ev::LeaseGranted, ev::LeaseFailed, ev::KeepaliveDone,
                           ev::Registered, ev::View, ev::AcquireDone, ev::OpenDone,
                           ev::WriterFenced, ev::RemoveDone, ev::HandoffDone, ev::CandidacyDone>;

// ---- effects: what the shell runs, in the order the core emits them ----
//
// The order is the order they must run in. Every Close comes first:
// stopping is never delayed by anything else, and a stream closed and
// opened again (after WriterFenced) is closed before it is opened. The
// rest follow in the order decided: a lease given up (LeaseGivenUp) before
// its Revoke, and that before a fresh GrantLease. A Close runs at once on
// the shell's strand; every other effect but LeaseGivenUp starts a task
// whose end comes back as exactly one event (named beside it).
namespace effect {
// Ask etcd for a fresh lease of lease_ttl_ms -> LeaseGranted / LeaseFailed.
struct GrantLease {};
// Keep `lease` alive -> KeepaliveDone (carrying sent_ms). Up to
// kMaxKeepalivesInFlight run at once: one waiting on a member that lost
// its leader does not hold back the next.
struct Keepalive {
  int64_t lease = 0;
  int64_t sent_ms = 0;  // when the core asked for it
};
// Put <ns>/nodes/<id> on `lease` -> Registered.
struct Register {
  int64_t lease = 0;
};
// Revoke an old lease, best effort (its owner keys go with it); no event.
struct Revoke {
  int64_t lease = 0;
};
// Create the stream's owner key on `lease` (the current one) -> AcquireDone.
// With from_lease: move the key, still this node's on a lease it gave up,
// to `lease` (only if it is still on from_lease).
struct Acquire {
  std::string stream;
  int64_t lease = 0;
  int64_t from_lease = 0;
};
// Won under `lease`: bump the epoch, recover, serve -> OpenDone.
struct Open {
  std::string stream;
  int64_t lease = 0;
};
// Stop writing and uploading the stream now; no event.
struct Close {
  std::string stream;
};
// Delete the stream served here (its deletion was requested) -> RemoveDone.
struct Remove {
  std::string stream;
  int64_t lease = 0;
};
// Hand it over to its first choice: stop writes, persist, close, release
// the owner key -> HandoffDone.
struct HandOff {
  std::string stream;
  int64_t lease = 0;
};
// Post this node's candidacy for an ownerless stream on `lease`: what its
// disk holds of it (node/node.h, Node::local_tail) -> CandidacyDone.
struct Stand {
  std::string stream;
  int64_t lease = 0;
};
// Delete this node's candidacy for a stream that has an owner -> CandidacyDone.
struct Withdraw {
  std::string stream;
  int64_t lease = 0;
};
// The lease was given up (fenced): logged and counted; every stream it
// served was closed by the Close effects before this one.
struct LeaseGivenUp {
  std::string why;
};
}  // namespace effect

using Effect = std::variant<effect::GrantLease, effect::Keepalive, effect::Register, effect::Revoke,
                            effect::Acquire, effect::Open, effect::Close, effect::Remove,
                            effect::HandOff, effect::LeaseGivenUp, effect::Stand, effect::Withdraw>;
using Effects = std::vector<Effect>;

class OwnershipCore {
 public:
  enum class Phase : uint8_t { no_lease, granting, registering, live };
  enum class StreamState : uint8_t { acquiring, opening, serving, handing_off };

  OwnershipCore(std::string node_id, OwnershipTiming timing);

  // Starts: the first lease grant.
  Effects start(int64_t now_ms);
  Effects on(const Event& e, int64_t now_ms);
  // Shutting down: close everything, revoke the lease; later events do nothing.
  Effects stop();

  Phase phase() const { return phase_; }
  int64_t lease() const { return lease_; }
  const std::map<std::string, StreamState>& streams() const { return streams_; }
  bool serving(const std::string& s) const;
  // Until when (monotonic ms) writes are allowed under the current lease;
  // 0 without a live lease.
  int64_t valid_until_ms() const;
  uint64_t fences() const { return fences_; }
  // Served streams closed and opened again after their writer was fenced.
  uint64_t writer_fences() const { return writer_fences_; }
  // Streams handed over to their first choice.
  uint64_t handoffs() const { return handoffs_; }
  const OwnershipTiming& timing() const { return t_; }

 private:
  struct Owned {
    StreamState state = StreamState::acquiring;
    int64_t acquired_revision = 0;
    bool in_flight = false;  // an acquire or open task runs
    bool removing = false;   // a deletion task runs
  };
  // ---- one handler per event ----
  void on_granted(const ev::LeaseGranted& g, Effects& fx);
  void on_lease_failed(int64_t now);
  void on_keepalive(const ev::KeepaliveDone& k, int64_t now, Effects& fx);
  void on_registered(const ev::Registered& r, int64_t now);
  void on_acquired(const ev::AcquireDone& a, int64_t now, Effects& fx);
  void on_opened(const ev::OpenDone& o, int64_t now, Effects& fx);
  void on_removed(const ev::RemoveDone& r, int64_t now);
  void on_handed_off(const ev::HandoffDone& h, int64_t now, Effects& fx);
  void on_writer_fenced(const ev::WriterFenced& f, Effects& fx);
  void on_candidacy(const ev::CandidacyDone& c, int64_t now);
  void apply(const ev::View& v, Effects& fx);

  // ---- the clock and the lease ----
  void check_clock(int64_t now, Effects& fx);
  void fence(const std::string& why, Effects& fx);
  // Closes every stream opened or opening and forgets every stream.
  void close_all(Effects& fx);

  // ---- what to start now (after every event) ----
  void drive(int64_t now, Effects& fx);
  void keep_lease(int64_t now, Effects& fx);
  void acquire_ownerless(int64_t now, Effects& fx);
  void remove_requested(int64_t now, Effects& fx);
  void maybe_hand_off(int64_t now, Effects& fx);
  void retry_opens(int64_t now, Effects& fx);
  // Elections: posts this node's candidacy for ownerless `stream` (once per
  // lease); whether this node takes it now, `waited` ms after it lost its owner.
  void stand_for(const std::string& stream, Effects& fx);
  bool elected(const std::string& stream, int64_t waited) const;
  bool has_candidacy(const std::string& stream) const;
  bool backing_off(const std::string& stream, int64_t now) const;
  void emit_open(const std::string& stream, Owned& o, Effects& fx);

  const std::string id_;
  const OwnershipTiming t_;
  bool stopped_ = false;
  Phase phase_ = Phase::no_lease;
  int64_t lease_ = 0;
  int64_t grant_sent_ms_ = 0;
  int64_t retry_grant_at_ = 0;
  int64_t last_ok_sent_ms_ = 0;  // send time of the last successful grant/keepalive
  int keepalives_in_flight_ = 0;
  int64_t next_keepalive_at_ = 0;
  bool register_in_flight_ = false;
  int64_t register_retry_at_ = 0;
  uint64_t fences_ = 0;
  uint64_t writer_fences_ = 0;
  uint64_t handoffs_ = 0;
  int64_t handoff_retry_at_ = 0;
  std::map<std::string, int64_t> node_seen_since_;  // registered node -> first seen (monotonic)
  // Registered node -> last seen, for member_memory_ms: the nodes an
  // election's majority is counted of. Kept through fences.
  std::map<std::string, int64_t> node_last_seen_;

  ev::View view_;
  std::map<std::string, int64_t> ownerless_since_;
  std::map<std::string, int64_t> retry_at_;  // stream -> no attempt before
  std::map<std::string, Owned> owned_;
  // Elections: streams with a Stand or Withdraw running, and those stood for
  // under the current lease (not posted again until they get an owner).
  std::set<std::string> candidacy_in_flight_;
  std::set<std::string> stood_;
  // Streams dropped (the view showed their key not ours) while an open ran
  // under the current lease: that open's OpenDone is this one's, not a
  // later open's, so the stream is not acquired again before it comes back.
  std::set<std::string> orphan_opens_;
  std::map<std::string, StreamState> streams_;  // mirror of owned_ for callers
  void mirror();
};

}  // namespace strata::cluster
