#include "server/sac_group.h"

#include <algorithm>

namespace strata::server {

namespace {
bool busy(SacGroup::State s) {
  return s != SacGroup::State::inactive;
}
// Asked with ConsumerUpdate, answer not back yet.
bool awaiting(SacGroup::State s) {
  return s == SacGroup::State::activating || s == SacGroup::State::deactivating;
}
}  // namespace

bool SacGroup::contains(ConsumerRef c) const {
  return std::any_of(members_.begin(), members_.end(), [&](const Member& m) { return m.ref == c; });
}

std::optional<ConsumerRef> SacGroup::active() const {
  for (const Member& m : members_) {
    if (m.state == State::active) return m.ref;
  }
  return std::nullopt;
}

// Brings the group to one busy member, the designated one: activates it
// when nobody is busy, asks a wrong busy one to step down, and waits while
// one is stepping down.
std::vector<SacEffect> SacGroup::reconcile(SacTime now) {
  std::vector<SacEffect> out;
  if (members_.empty()) return out;
  auto cur =
      std::find_if(members_.begin(), members_.end(), [](const Member& m) { return busy(m.state); });
  if (cur != members_.end() && cur->state == State::deactivating) return out;
  // A plain stream keeps its active consumer; a partition's is fixed by
  // its index.
  Member* target = nullptr;
  if (partition_index_) {
    target = &members_[*partition_index_ % members_.size()];
  } else {
    target = cur != members_.end() ? &*cur : &members_.front();
  }
  if (cur == members_.end()) {
    target->state = State::activating;
    target->deadline = now + answer_timeout_;
    out.push_back({SacEffect::Kind::send_update, target->ref, true});
  } else if (&*cur != target) {
    cur->state = State::deactivating;
    cur->deadline = now + answer_timeout_;
    out.push_back({SacEffect::Kind::deactivate, cur->ref, false});
    out.push_back({SacEffect::Kind::send_update, cur->ref, false});
  }
  return out;
}

std::vector<SacEffect> SacGroup::subscribe(ConsumerRef c, SacTime now) {
  if (contains(c)) return {};
  members_.push_back(Member{c, State::inactive, {}});
  return reconcile(now);
}

std::vector<SacEffect> SacGroup::remove_where(bool (*match)(const Member&, const void*),
                                              const void* arg, SacTime now) {
  const size_t before = members_.size();
  members_.erase(std::remove_if(members_.begin(), members_.end(),
                                [&](const Member& m) { return match(m, arg); }),
                 members_.end());
  if (members_.size() == before) return {};
  return reconcile(now);
}

std::vector<SacEffect> SacGroup::unsubscribe(ConsumerRef c, SacTime now) {
  return remove_where(
      [](const Member& m, const void* a) { return m.ref == *static_cast<const ConsumerRef*>(a); },
      &c, now);
}

std::vector<SacEffect> SacGroup::connection_gone(uint64_t connection, SacTime now) {
  return remove_where(
      [](const Member& m, const void* a) {
        return m.ref.connection == *static_cast<const uint64_t*>(a);
      },
      &connection, now);
}

std::optional<SacTime> SacGroup::next_deadline() const {
  for (const Member& m : members_) {
    if (awaiting(m.state)) return m.deadline;
  }
  return std::nullopt;
}

std::vector<SacEffect> SacGroup::expire(SacTime now) {
  auto late = std::find_if(members_.begin(), members_.end(),
                           [&](const Member& m) { return awaiting(m.state) && m.deadline <= now; });
  if (late == members_.end()) return {};
  std::vector<SacEffect> out{{SacEffect::Kind::timed_out, late->ref, false}};
  members_.erase(late);
  auto next = reconcile(now);
  out.insert(out.end(), next.begin(), next.end());
  return out;
}

std::vector<SacEffect> SacGroup::consumer_update_answered(ConsumerRef c, SacTime now) {
  auto m =
      std::find_if(members_.begin(), members_.end(), [&](const Member& x) { return x.ref == c; });
  if (m == members_.end()) return {};
  if (m->state == State::activating) {
    m->state = State::active;
    return {{SacEffect::Kind::activate, c, true}};
  }
  if (m->state == State::deactivating) {
    m->state = State::inactive;
    return reconcile(now);
  }
  return {};
}

// ---- SacGroups ----

std::vector<SacEffect> SacGroups::after(std::map<Key, SacGroup>::iterator it,
                                        std::vector<SacEffect> e) {
  if (it->second.empty()) groups_.erase(it);
  return e;
}

std::vector<SacEffect> SacGroups::subscribe(const std::string& stream, const std::string& name,
                                            ConsumerRef c, std::optional<uint32_t> partition_index,
                                            SacTime now) {
  auto it = groups_.try_emplace(Key{stream, name}, partition_index, answer_timeout_).first;
  return it->second.subscribe(c, now);
}

std::vector<SacEffect> SacGroups::unsubscribe(const std::string& stream, const std::string& name,
                                              ConsumerRef c, SacTime now) {
  auto it = groups_.find(Key{stream, name});
  if (it == groups_.end()) return {};
  return after(it, it->second.unsubscribe(c, now));
}

std::vector<SacEffect> SacGroups::expire(SacTime now) {
  std::vector<SacEffect> out;
  for (auto it = groups_.begin(); it != groups_.end();) {
    auto e = it->second.expire(now);
    out.insert(out.end(), e.begin(), e.end());
    it = it->second.empty() ? groups_.erase(it) : std::next(it);
  }
  return out;
}

std::optional<SacTime> SacGroups::next_deadline() const {
  std::optional<SacTime> out;
  for (const auto& [key, g] : groups_) {
    auto d = g.next_deadline();
    if (d && (!out || *d < *out)) out = d;
  }
  return out;
}

std::vector<SacEffect> SacGroups::connection_gone(uint64_t connection, SacTime now) {
  std::vector<SacEffect> out;
  for (auto it = groups_.begin(); it != groups_.end();) {
    auto e = it->second.connection_gone(connection, now);
    out.insert(out.end(), e.begin(), e.end());
    it = it->second.empty() ? groups_.erase(it) : std::next(it);
  }
  return out;
}

std::vector<SacEffect> SacGroups::consumer_update_answered(const std::string& stream,
                                                           const std::string& name, ConsumerRef c,
                                                           SacTime now) {
  auto it = groups_.find(Key{stream, name});
  if (it == groups_.end()) return {};
  return it->second.consumer_update_answered(c, now);
}

const SacGroup* SacGroups::group(const std::string& stream, const std::string& name) const {
  auto it = groups_.find(Key{stream, name});
  return it == groups_.end() ? nullptr : &it->second;
}

}  // namespace strata::server
