#include "server/replica_core.h"

#include <algorithm>

namespace strata::server {

using proto::OffsetType;

ReplicaStep ReplicaCore::forward(proto::OffsetSpec spec) {
  phase_ = Phase::forwarding;
  forwarded_ = spec;
  ReplicaStep s;
  s.kind = ReplicaStep::Kind::forward;
  s.spec = spec;
  return s;
}

ReplicaStep ReplicaCore::forward_from_here() {
  if (next_) return forward(proto::OffsetSpec{OffsetType::offset, int64_t(*next_)});
  return forward(forwarded_);
}

ReplicaStep ReplicaCore::start(std::optional<RemoteRange> remote) {
  forwarded_ = spec_;
  if (remote) known_up_to(remote->next);
  if (!remote || remote->empty()) return forward(spec_);
  ReplicaStep s;
  s.kind = ReplicaStep::Kind::read_remote;
  switch (spec_.type) {
    case OffsetType::first:
      s.remote.offset = remote->first;
      break;
    case OffsetType::offset: {
      uint64_t n = uint64_t(std::max<int64_t>(spec_.value, 0));
      if (n >= remote->next) return forward(spec_);
      s.remote.offset = std::max(n, remote->first);
      break;
    }
    case OffsetType::timestamp:
      s.remote.kind = tier::RemoteStart::Kind::timestamp;
      s.remote.timestamp = spec_.value;
      break;
    case OffsetType::last:
    case OffsetType::next:
      return forward(spec_);
  }
  phase_ = Phase::remote;
  return s;
}

ReplicaStep ReplicaCore::remote_done(uint64_t cursor, std::optional<RemoteRange> newer) {
  if (newer) known_up_to(newer->next);
  if (newer && !newer->empty() && newer->first <= cursor && cursor < newer->next) {
    // Persisted since the snapshot was read: still the remote tier's.
    ReplicaStep s;
    s.kind = ReplicaStep::Kind::read_remote;
    s.remote.offset = cursor;
    return s;
  }
  // A timestamp no remote chunk reached: the owner resolves it.
  if (!next_ && spec_.type == OffsetType::timestamp) return forward(spec_);
  return forward(proto::OffsetSpec{OffsetType::offset, int64_t(next_.value_or(cursor))});
}

ReplicaCore::Accept ReplicaCore::accept(uint64_t first, uint64_t next) {
  if (next_ && next <= *next_) {
    repeats_ += 1;
    return Accept::repeat;
  }
  if (next_ && first < *next_) {
    divergences_ += 1;
    return Accept::diverged;
  }
  // Above the next offset expected: offsets the owner no longer has (a
  // takeover dropped an unpersisted tail under confirm = local, or
  // retention); counted, and delivery goes on as any reader's would.
  if (next_ && first > *next_) gaps_ += 1;
  next_ = next;
  known_up_to(next);
  return Accept::deliver;
}

void ReplicaCore::known_up_to(uint64_t end) {
  known_end_ = std::max(known_end_, end);
}

std::optional<uint64_t> ReplicaCore::lag() const {
  if (!next_) return std::nullopt;
  return known_end_ - *next_;
}

void ReplicaCore::linked() {
  phase_ = Phase::forwarding;
  lost_since_.reset();
}

ReplicaStep ReplicaCore::link_lost(Time now) {
  if (phase_ == Phase::given_up) return ReplicaStep{ReplicaStep::Kind::give_up, {}, {}};
  if (!lost_since_) lost_since_ = now;
  if (now - *lost_since_ >= limit_) {
    phase_ = Phase::given_up;
    return ReplicaStep{ReplicaStep::Kind::give_up, {}, {}};
  }
  ReplicaStep s = forward_from_here();
  phase_ = Phase::reconnecting;
  return s;
}

}  // namespace strata::server
