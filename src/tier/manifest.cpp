#include "tier/manifest.h"

#include <fmt/format.h>

#include <algorithm>

namespace strata::tier {

namespace {

Error bad_edit(const ManifestEdit& e, const std::string& why) {
  return Error(Errc::invalid_argument, fmt::format("manifest edit {}: {}", describe(e), why));
}

// End of root entry i: the next entry's offset, or the manifest's next offset.
uint64_t entry_end(const Manifest& m, size_t i) {
  return i + 1 < m.entries.size() ? m.entries[i + 1].offset : m.next_offset;
}

Status apply_append(Manifest& m, const AppendEdit& a, const ManifestEdit& whole) {
  const ManifestEntry& e = a.entry;
  if (e.kind != kKindFragment) return bad_edit(whole, "appended entry is not a fragment");
  if (e.offset != m.next_offset) {
    return bad_edit(whole, fmt::format("fragment starts at {} but the manifest ends at {}",
                                       e.offset, m.next_offset));
  }
  if (a.next_offset <= e.offset) return bad_edit(whole, "fragment next offset not above its first");
  if (e.size == 0) return bad_edit(whole, "fragment of zero bytes");
  if (e.first_ts > e.last_ts) return bad_edit(whole, "fragment first timestamp after its last");
  uint64_t total;
  if (__builtin_add_overflow(m.total_size, e.size, &total)) {
    return bad_edit(whole, "total size overflows 64 bits");
  }
  if (m.entries.empty()) {
    m.first_offset = e.offset;
    m.first_ts = e.first_ts;
    m.last_ts = e.last_ts;
  } else {
    m.last_ts = std::max(m.last_ts, e.last_ts);
  }
  m.entries.push_back(e);
  m.next_offset = a.next_offset;
  m.total_size = total;
  return Status::OK();
}

Status apply_truncate(Manifest& m, const TruncateEdit& t, const ManifestEdit& whole) {
  if (t.remove_entries > m.entries.size()) {
    return bad_edit(whole, fmt::format("removes {} entries but the root has {}", t.remove_entries,
                                       m.entries.size()));
  }
  if (t.first_offset < m.first_offset || t.first_offset > m.next_offset) {
    return bad_edit(whole, fmt::format("new first offset {} outside [{}, {}]", t.first_offset,
                                       m.first_offset, m.next_offset));
  }
  if (t.removed_bytes > m.total_size) {
    return bad_edit(whole, fmt::format("removes {} bytes but the manifest holds {}",
                                       t.removed_bytes, m.total_size));
  }
  size_t keep_from = t.remove_entries;
  if (keep_from == m.entries.size()) {
    if (t.first_offset != m.next_offset || t.removed_bytes != m.total_size) {
      return bad_edit(whole, "removes every entry but leaves offsets or bytes behind");
    }
    m.entries.clear();
    m.first_offset = m.next_offset;
    m.first_ts = -1;
    m.last_ts = -1;
    m.total_size = 0;
    return Status::OK();
  }
  const ManifestEntry& head = m.entries[keep_from];
  if (head.offset > t.first_offset || entry_end(m, keep_from) <= t.first_offset) {
    return bad_edit(whole, fmt::format("new first offset {} is not inside the first kept entry "
                                       "[{}, {})",
                                       t.first_offset, head.offset, entry_end(m, keep_from)));
  }
  if (head.kind == kKindFragment && head.offset != t.first_offset) {
    return bad_edit(whole, fmt::format("new first offset {} splits fragment at {}", t.first_offset,
                                       head.offset));
  }
  if (t.removed_bytes == m.total_size) {
    return bad_edit(whole, "removes every byte but keeps entries");
  }
  m.entries.erase(m.entries.begin(), m.entries.begin() + keep_from);
  m.first_offset = t.first_offset;
  m.first_ts = t.first_ts;
  m.total_size -= t.removed_bytes;
  return Status::OK();
}

Status apply_replace(Manifest& m, const ReplaceEdit& r, const ManifestEdit& whole) {
  if (r.count == 0) return bad_edit(whole, "replaces zero entries");
  if (uint64_t(r.position) + r.count > m.entries.size()) {
    return bad_edit(whole, fmt::format("run [{}, {}) outside the root's {} entries", r.position,
                                       uint64_t(r.position) + r.count, m.entries.size()));
  }
  const ManifestEntry& g = r.group;
  if (g.kind == kKindFragment || g.kind > kMaxKind) {
    return bad_edit(whole, fmt::format("group entry of kind {}", g.kind));
  }
  uint64_t size = 0;
  int64_t last_ts = m.entries[r.position].last_ts;
  for (uint32_t i = r.position; i < r.position + r.count; ++i) {
    const ManifestEntry& e = m.entries[i];
    if (e.kind + 1 != g.kind) {
      return bad_edit(whole, fmt::format("entry {} at offset {} has kind {}, a kind-{} group holds "
                                         "kind {}",
                                         i, e.offset, e.kind, g.kind, g.kind - 1));
    }
    if (__builtin_add_overflow(size, e.size, &size)) {
      return bad_edit(whole, "group size overflows 64 bits");
    }
    last_ts = std::max(last_ts, e.last_ts);
  }
  const ManifestEntry& first = m.entries[r.position];
  if (g.offset != first.offset || g.first_ts != first.first_ts || g.last_ts != last_ts ||
      g.size != size) {
    return bad_edit(whole, fmt::format("group entry (offset {}, ts [{}, {}], {} bytes) does not "
                                       "summarize the run (offset {}, ts [{}, {}], {} bytes)",
                                       g.offset, g.first_ts, g.last_ts, g.size, first.offset,
                                       first.first_ts, last_ts, size));
  }
  m.entries[r.position] = g;
  m.entries.erase(m.entries.begin() + r.position + 1, m.entries.begin() + r.position + r.count);
  return Status::OK();
}

}  // namespace

uint64_t uploaded_after_epoch(const Manifest& m, uint64_t epoch) {
  uint64_t from = m.next_offset;
  for (auto it = m.entries.rbegin(); it != m.entries.rend(); ++it) {
    if (it->kind != kKindFragment || it->epoch <= epoch) break;
    from = it->offset;
  }
  return from;
}

Manifest Manifest::empty_at(uint64_t offset) {
  Manifest m;
  m.first_offset = offset;
  m.next_offset = offset;
  return m;
}

std::string describe(const ManifestEdit& e) {
  struct V {
    std::string operator()(const AppendEdit& a) const {
      return fmt::format("append(fragment [{}, {}) {} bytes uid {:08x})", a.entry.offset,
                         a.next_offset, a.entry.size, a.entry.uid);
    }
    std::string operator()(const TruncateEdit& t) const {
      return fmt::format("truncate({} entries, first offset {}, {} bytes)", t.remove_entries,
                         t.first_offset, t.removed_bytes);
    }
    std::string operator()(const ReplaceEdit& r) const {
      return fmt::format("replace(entries [{}, {}) by kind-{} group at offset {} uid {:08x})",
                         r.position, uint64_t(r.position) + r.count, r.group.kind, r.group.offset,
                         r.group.uid);
    }
  };
  return std::visit(V{}, e);
}

Status apply_edit(Manifest& m, const ManifestEdit& e) {
  if (auto* a = std::get_if<AppendEdit>(&e)) return apply_append(m, *a, e);
  if (auto* t = std::get_if<TruncateEdit>(&e)) return apply_truncate(m, *t, e);
  return apply_replace(m, std::get<ReplaceEdit>(e), e);
}

Status validate_manifest(const Manifest& m, const std::string& where) {
  auto bad = [&](const std::string& why) {
    return Error(Errc::corrupt, fmt::format("manifest {}: {}", where, why));
  };
  if (m.first_offset > m.next_offset) {
    return bad(fmt::format("first offset {} above next offset {}", m.first_offset, m.next_offset));
  }
  if (m.entries.empty()) {
    if (m.first_offset != m.next_offset) {
      return bad(fmt::format("no entries but range [{}, {})", m.first_offset, m.next_offset));
    }
    if (m.total_size != 0) return bad("no entries but a non-zero total size");
    return Status::OK();
  }
  if (m.first_offset == m.next_offset) return bad("entries in an empty range");
  uint64_t frag_sum = 0;
  bool only_fragments = true;
  for (size_t i = 0; i < m.entries.size(); ++i) {
    const ManifestEntry& e = m.entries[i];
    if (e.kind > kMaxKind) return bad(fmt::format("entry {} has kind {}", i, e.kind));
    if (e.first_ts > e.last_ts) {
      return bad(fmt::format("entry {} at offset {}: first timestamp after last", i, e.offset));
    }
    if (i > 0 && e.offset <= m.entries[i - 1].offset) {
      return bad(fmt::format("non-monotonic offsets: entry {} at {} after entry at {}", i, e.offset,
                             m.entries[i - 1].offset));
    }
    if (e.kind == kKindFragment) {
      if (e.size == 0) return bad(fmt::format("fragment at offset {} has zero bytes", e.offset));
      if (__builtin_add_overflow(frag_sum, e.size, &frag_sum)) {
        return bad("size overflow: fragment sizes exceed 64 bits");
      }
    } else {
      only_fragments = false;
    }
  }
  const ManifestEntry& head = m.entries.front();
  if (head.offset > m.first_offset || entry_end(m, 0) <= m.first_offset) {
    return bad(fmt::format("first entry [{}, {}) does not cover first offset {}", head.offset,
                           entry_end(m, 0), m.first_offset));
  }
  if (head.kind == kKindFragment && head.offset != m.first_offset) {
    return bad(
        fmt::format("first fragment at {} but first offset {}", head.offset, m.first_offset));
  }
  if (m.entries.back().offset >= m.next_offset) {
    return bad(fmt::format("last entry at {} not below next offset {}", m.entries.back().offset,
                           m.next_offset));
  }
  if (only_fragments ? frag_sum != m.total_size : frag_sum > m.total_size) {
    return bad(fmt::format("size overflow: entries hold {} fragment bytes, header says {}",
                           frag_sum, m.total_size));
  }
  return Status::OK();
}

std::optional<RebalanceRun> detect_rebalance(const Manifest& m, const RebalancePolicy& p) {
  size_t i = 0;
  const size_t n = m.entries.size();
  while (i < n) {
    uint8_t kind = m.entries[i].kind;
    size_t j = i + 1;
    while (j < n && m.entries[j].kind == kind) ++j;
    uint32_t threshold = std::max<uint32_t>(p.threshold_for(kind), 2);
    if (j - i >= threshold && kind < kMaxKind) {
      return RebalanceRun{uint32_t(i), threshold, kind};
    }
    i = j;
  }
  return std::nullopt;
}

ReplaceEdit NewGroup::edit() const {
  return ReplaceEdit{position, count, entry};
}

Result<NewGroup> make_group(const Manifest& m, const RebalanceRun& run, uint64_t epoch,
                            uint32_t uid) {
  if (run.count == 0 || uint64_t(run.position) + run.count > m.entries.size()) {
    return Error(Errc::invalid_argument,
                 fmt::format("rebalance run [{}, {}) outside the root's {} entries", run.position,
                             uint64_t(run.position) + run.count, m.entries.size()));
  }
  NewGroup g;
  g.position = run.position;
  g.count = run.count;
  ManifestGroup& o = g.object;
  o.level = uint8_t(run.entry_kind + 1);
  o.epoch = epoch;
  o.entries.assign(m.entries.begin() + run.position, m.entries.begin() + run.position + run.count);
  o.first_offset = o.entries.front().offset;
  o.next_offset = entry_end(m, run.position + run.count - 1);
  o.first_ts = o.entries.front().first_ts;
  o.last_ts = o.entries.front().last_ts;
  for (const ManifestEntry& e : o.entries) {
    if (e.kind != run.entry_kind) {
      return Error(Errc::invalid_argument, fmt::format("rebalance run at {} mixes kinds {} and {}",
                                                       run.position, run.entry_kind, e.kind));
    }
    if (__builtin_add_overflow(o.total_size, e.size, &o.total_size)) {
      return Error(Errc::invalid_argument,
                   fmt::format("rebalance run at offset {}: size overflow", o.first_offset));
    }
    o.last_ts = std::max(o.last_ts, e.last_ts);
  }
  g.entry = ManifestEntry{o.first_offset, o.first_ts, o.last_ts, o.total_size, epoch, uid, o.level};
  return g;
}

}  // namespace strata::tier
