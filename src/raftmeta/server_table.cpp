#include "raftmeta/server_table.h"

#include <bit>
#include <cstring>
#include <thread>

#include "common/assert.h"

namespace strata::raftmeta {

namespace {

// Meta word layout.
constexpr uint64_t kLive = 1;
constexpr uint64_t kHasTerm = 2;
constexpr uint64_t kHasApplied = 4;
constexpr int kFormShift = 3;      // 2 bits
constexpr int kIdLenShift = 8;     // 8 bits
constexpr int kNameLenShift = 16;  // 16 bits
constexpr int kNodeShift = 32;     // 32 bits

size_t words_for(size_t bytes) {
  return (bytes + 7) / 8;
}

void pack(BytesView b, uint64_t* out, size_t n_words) {
  std::memset(out, 0, n_words * 8);
  std::memcpy(out, b.data(), b.size());
}

// A reader that finds a write in progress spins briefly, then yields (the
// writer may have been preempted inside its few stores).
void backoff(int* spins) {
  if (++*spins < 64) return;
  *spins = 0;
  std::this_thread::yield();
}

}  // namespace

ServerTable::ServerTable(uint32_t capacity, const Bounds& bounds, uint32_t node_capacity)
    : capacity_(capacity),
      bounds_(bounds),
      id_words_(words_for(bounds.max_id_bytes)),
      name_words_(words_for(bounds.max_name_bytes)),
      stride_(kIdWord + id_words_ + name_words_),
      words_(new std::atomic<uint64_t>[size_t(capacity) * stride_]()),
      bucket_mask_(std::bit_ceil(std::max<uint64_t>(16, uint64_t(capacity) * 2)) - 1),
      buckets_(new std::atomic<uint32_t>[bucket_mask_ + 1]()),
      node_capacity_(node_capacity),
      nodes_(new std::atomic<const std::string*>[std::max<uint32_t>(node_capacity, 1)]()),
      shadow_(capacity) {
  free_.reserve(capacity);
  // Lowest entry handed out first.
  for (uint32_t e = capacity; e > 0; --e) free_.push_back(e - 1);
}

uint64_t ServerTable::hash(BytesView id) {
  return std::hash<std::string_view>()(id);
}

// ---- readers ----

bool ServerTable::snapshot_entry(uint32_t e, BytesView id, const uint64_t* id_words, bool with_name,
                                 EntrySnapshot* out) const {
  const std::atomic<uint64_t>* w = entry(e);
  for (int spins = 0;; backoff(&spins)) {
    const uint64_t s1 = w[kSeqWord].load(std::memory_order_acquire);
    if (s1 & 1) continue;
    const uint64_t meta = w[kMetaWord].load(std::memory_order_relaxed);
    bool match = (meta & kLive) && ((meta >> kIdLenShift) & 0xFF) == id.size();
    for (size_t i = 0; match && i < words_for(id.size()); ++i) {
      match = w[kIdWord + i].load(std::memory_order_relaxed) == id_words[i];
    }
    if (match) {
      out->meta = meta;
      out->term = w[kTermWord].load(std::memory_order_relaxed);
      out->applied = w[kAppliedWord].load(std::memory_order_relaxed);
      out->version = w[kVoteVersionWord].load(std::memory_order_relaxed);
      out->name_len = std::min<size_t>((meta >> kNameLenShift) & 0xFFFF, name_words_ * 8);
      if (with_name) {
        for (size_t i = 0; i < words_for(out->name_len); ++i) {
          out->name[i] = w[kIdWord + id_words_ + i].load(std::memory_order_relaxed);
        }
      }
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (w[kSeqWord].load(std::memory_order_relaxed) != s1) continue;
    return match;
  }
}

bool ServerTable::read_entry(uint32_t e, BytesView id, const uint64_t* id_words, bool with_vote,
                             ServerMeta* out) const {
  EntrySnapshot snap;
  if (!snapshot_entry(e, id, id_words, with_vote, &snap)) return false;
  // A consistent copy: decode it.
  const uint64_t meta = snap.meta;
  out->current_term = (meta & kHasTerm) ? std::optional<uint64_t>(snap.term) : std::nullopt;
  out->last_applied = (meta & kHasApplied) ? std::optional<uint64_t>(snap.applied) : std::nullopt;
  out->voted_for = VotedFor::none();
  const auto form = VotedFor::Form((meta >> kFormShift) & 3);
  if (with_vote && form != VotedFor::Form::none) {
    out->voted_for.form = form;
    out->voted_for.name.assign(reinterpret_cast<const char*>(snap.name), snap.name_len);
    if (form == VotedFor::Form::server_id) {
      out->voted_for.node = std::string(node_name(uint32_t(meta >> kNodeShift)));
    }
  }
  return true;
}

template <class TryEntry>
bool ServerTable::lookup(BytesView id, const TryEntry& try_entry) const {
  uint64_t id_words[kMaxIdWords];
  pack(id, id_words, words_for(id.size()));
  const uint64_t h = hash(id);
  for (int spins = 0;; backoff(&spins)) {
    const uint64_t v1 = index_seq_.load(std::memory_order_acquire);
    if (v1 & 1) continue;
    bool found = false;
    for (uint64_t i = 0; i <= bucket_mask_; ++i) {
      const uint32_t b = buckets_[(h + i) & bucket_mask_].load(std::memory_order_acquire);
      if (b == 0) break;
      if (b - 1 < capacity_ && try_entry(b - 1, id_words)) {
        found = true;
        break;
      }
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (index_seq_.load(std::memory_order_relaxed) != v1) continue;
    return found;
  }
}

std::optional<ServerMeta> ServerTable::read(BytesView id, bool with_vote) const {
  if (id.empty() || id.size() > bounds_.max_id_bytes) return std::nullopt;
  ServerMeta m;
  const bool found = lookup(id, [&](uint32_t e, const uint64_t* id_words) {
    return read_entry(e, id, id_words, with_vote, &m);
  });
  if (!found) return std::nullopt;
  return m;
}

bool ServerTable::read_vote_entry(uint32_t e, BytesView id, const uint64_t* id_words,
                                  char* name_buf, VoteRead* out) const {
  EntrySnapshot snap;
  if (!snapshot_entry(e, id, id_words, name_buf != nullptr, &snap)) return false;
  out->form = VotedFor::Form((snap.meta >> kFormShift) & 3);
  out->node = uint32_t(snap.meta >> kNodeShift);
  out->name_len = out->form == VotedFor::Form::none ? 0 : snap.name_len;
  out->version = snap.version;
  out->entry = e;
  if (name_buf != nullptr) std::memcpy(name_buf, snap.name, out->name_len);
  return true;
}

std::optional<VoteRead> ServerTable::read_vote(BytesView id, char* name_buf) const {
  if (id.empty() || id.size() > bounds_.max_id_bytes) return std::nullopt;
  VoteRead v;
  const bool found = lookup(id, [&](uint32_t e, const uint64_t* id_words) {
    return read_vote_entry(e, id, id_words, name_buf, &v);
  });
  if (!found) return std::nullopt;
  return v;
}

std::string_view ServerTable::node_name(uint32_t node) const {
  const std::string* s =
      node < node_capacity_ ? nodes_[node].load(std::memory_order_acquire) : nullptr;
  STRATA_ASSERT(s != nullptr, "raftmeta table: vote refers to an unknown node id");
  return *s;
}

void ServerTable::for_each(const std::function<void(BytesView, const ServerMeta&)>& fn) const {
  uint64_t id_words[kMaxIdWords];
  for (uint32_t e = 0; e < capacity_; ++e) {
    const std::atomic<uint64_t>* w = entry(e);
    // Copy the id under the entry's sequence lock, then read the entry as
    // any reader would (it may have changed owner in between: then skip).
    Bytes id;
    for (int spins = 0;; backoff(&spins)) {
      const uint64_t s1 = w[kSeqWord].load(std::memory_order_acquire);
      if (s1 & 1) continue;
      const uint64_t meta = w[kMetaWord].load(std::memory_order_relaxed);
      const size_t len = std::min<size_t>((meta >> kIdLenShift) & 0xFF, id_words_ * 8);
      const bool live = meta & kLive;
      for (size_t i = 0; live && i < words_for(len); ++i) {
        id_words[i] = w[kIdWord + i].load(std::memory_order_relaxed);
      }
      std::atomic_thread_fence(std::memory_order_acquire);
      if (w[kSeqWord].load(std::memory_order_relaxed) != s1) continue;
      if (live) id.assign(reinterpret_cast<const char*>(id_words), len);
      break;
    }
    if (id.empty()) continue;
    ServerMeta m;
    if (read_entry(e, id, id_words, true, &m)) fn(id, m);
  }
}

// ---- writers ----

void ServerTable::begin_write(uint32_t e) {
  std::atomic<uint64_t>& s = entry(e)[kSeqWord];
  s.store(s.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
}

void ServerTable::end_write(uint32_t e) {
  std::atomic<uint64_t>& s = entry(e)[kSeqWord];
  s.store(s.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

std::optional<uint32_t> ServerTable::find(BytesView id) const {
  const uint64_t h = hash(id);
  for (uint64_t i = 0; i <= bucket_mask_; ++i) {
    const uint32_t b = buckets_[(h + i) & bucket_mask_].load(std::memory_order_relaxed);
    if (b == 0) return std::nullopt;
    if (shadow_[b - 1].hash == h && shadow_[b - 1].id == id) return b - 1;
  }
  return std::nullopt;
}

std::optional<uint32_t> ServerTable::insert(BytesView id) {
  STRATA_ASSERT(!id.empty() && id.size() <= bounds_.max_id_bytes, "raftmeta table: bad id");
  if (free_.empty()) return std::nullopt;
  const uint32_t e = free_.back();
  free_.pop_back();
  Shadow& sh = shadow_[e];
  STRATA_ASSERT(!sh.live, "raftmeta table: free entry is live");
  sh.live = true;
  sh.id.assign(id);
  sh.meta = ServerMeta{};
  sh.hash = hash(id);

  // The entry is complete before the bucket that leads readers to it.
  std::atomic<uint64_t>* w = entry(e);
  uint64_t id_words[kMaxIdWords];
  pack(id, id_words, id_words_);
  begin_write(e);
  w[kMetaWord].store(kLive | (uint64_t(id.size()) << kIdLenShift), std::memory_order_relaxed);
  w[kTermWord].store(0, std::memory_order_relaxed);
  w[kAppliedWord].store(0, std::memory_order_relaxed);
  // A new server's (absent) vote is a new vote: what a reader cached for
  // this entry's previous server must not match it.
  w[kVoteVersionWord].store(++vote_version_, std::memory_order_relaxed);
  for (size_t i = 0; i < id_words_; ++i)
    w[kIdWord + i].store(id_words[i], std::memory_order_relaxed);
  end_write(e);

  // Linear probing; removals shift entries back, so there are no tombstones
  // and the table (at most half full) always has an empty bucket.
  for (uint64_t i = 0;; ++i) {
    STRATA_ASSERT(i <= bucket_mask_, "raftmeta table: index full");
    const uint64_t at = (sh.hash + i) & bucket_mask_;
    if (buckets_[at].load(std::memory_order_relaxed) == 0) {
      sh.bucket = uint32_t(at);
      buckets_[at].store(e + 1, std::memory_order_release);
      break;
    }
  }
  ++live_;
  return e;
}

void ServerTable::remove(uint32_t e) {
  Shadow& sh = shadow_[e];
  STRATA_ASSERT(sh.live, "raftmeta table: removing a free entry");
  begin_write(e);
  entry(e)[kMetaWord].store(0, std::memory_order_relaxed);
  end_write(e);

  // Backward-shift deletion. Readers that overlap it see index_seq_ change
  // and retry, so they never miss an entry that moved past them.
  index_seq_.store(index_seq_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  uint64_t i = sh.bucket;
  for (uint64_t j = (i + 1) & bucket_mask_;; j = (j + 1) & bucket_mask_) {
    const uint32_t b = buckets_[j].load(std::memory_order_relaxed);
    if (b == 0) break;
    const uint64_t home = shadow_[b - 1].hash & bucket_mask_;
    // The entry at j may move to i unless its home lies in (i, j] (cyclic).
    const bool stays = i < j ? (home > i && home <= j) : (home > i || home <= j);
    if (!stays) {
      buckets_[i].store(b, std::memory_order_relaxed);
      shadow_[b - 1].bucket = uint32_t(i);
      i = j;
    }
  }
  buckets_[i].store(0, std::memory_order_relaxed);
  index_seq_.store(index_seq_.load(std::memory_order_relaxed) + 1, std::memory_order_release);

  sh.live = false;
  sh.id.clear();
  sh.id.shrink_to_fit();
  sh.meta = ServerMeta{};
  free_.push_back(e);
  --live_;
}

void ServerTable::set(uint32_t e, const ServerMeta& m) {
  Shadow& sh = shadow_[e];
  STRATA_ASSERT(sh.live, "raftmeta table: set on a free entry");
  const VotedFor& v = m.voted_for;
  STRATA_ASSERT(v.name.size() <= bounds_.max_name_bytes, "raftmeta table: vote name too long");
  uint64_t node = 0;
  if (v.form == VotedFor::Form::server_id) {
    auto it = node_ids_.find(v.node);
    STRATA_ASSERT(it != node_ids_.end(), "raftmeta table: vote node not interned");
    node = it->second;
  }
  const uint64_t meta = kLive | (m.current_term ? kHasTerm : 0) |
                        (m.last_applied ? kHasApplied : 0) | (uint64_t(v.form) << kFormShift) |
                        (uint64_t(sh.id.size()) << kIdLenShift) |
                        (uint64_t(v.name.size()) << kNameLenShift) | (node << kNodeShift);
  const bool vote_changed = !(sh.meta.voted_for == v);
  uint64_t name_words[kMaxBytesWords];
  if (vote_changed) pack(v.name, name_words, words_for(v.name.size()));

  std::atomic<uint64_t>* w = entry(e);
  begin_write(e);
  w[kMetaWord].store(meta, std::memory_order_relaxed);
  w[kTermWord].store(m.current_term.value_or(0), std::memory_order_relaxed);
  w[kAppliedWord].store(m.last_applied.value_or(0), std::memory_order_relaxed);
  if (vote_changed) {
    for (size_t i = 0; i < words_for(v.name.size()); ++i) {
      w[kIdWord + id_words_ + i].store(name_words[i], std::memory_order_relaxed);
    }
    w[kVoteVersionWord].store(++vote_version_, std::memory_order_relaxed);
  }
  end_write(e);
  sh.meta = m;
}

void ServerTable::set_last_applied(uint32_t e, uint64_t applied) {
  Shadow& sh = shadow_[e];
  STRATA_ASSERT(sh.live, "raftmeta table: set on a free entry");
  std::atomic<uint64_t>* w = entry(e);
  const uint64_t meta = w[kMetaWord].load(std::memory_order_relaxed) | kHasApplied;
  begin_write(e);
  w[kMetaWord].store(meta, std::memory_order_relaxed);
  w[kAppliedWord].store(applied, std::memory_order_relaxed);
  end_write(e);
  sh.meta.last_applied = applied;
}

bool ServerTable::intern_node(std::string_view node) {
  STRATA_ASSERT(node.size() <= bounds_.max_node_bytes, "raftmeta table: node name too long");
  if (node_ids_.count(std::string(node))) return true;
  if (node_storage_.size() >= node_capacity_) return false;
  const uint32_t id = uint32_t(node_storage_.size());
  node_storage_.push_back(std::make_unique<std::string>(node));
  node_ids_.emplace(std::string(node), id);
  nodes_[id].store(node_storage_.back().get(), std::memory_order_release);
  return true;
}

}  // namespace strata::raftmeta
