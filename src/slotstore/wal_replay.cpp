// Recovery's WAL replay: which halves to replay and in what order, the slot
// rule applied to each entry, and the decision at the end of each half's
// chain between a torn tail (the normal end) and corruption. The argument
// is in docs/formats/slotstore.md, "WAL" and "Why this is crash-safe".
#include <fmt/format.h>

#include <algorithm>

#include "common/tail_damage.h"
#include "slotstore/slot_rules.h"
#include "slotstore/store_impl.h"

namespace strata::slotstore {

// The half that is not the active one, as replay found it.
struct SlotStore::Impl::OlderHalf {
  int half = 0;
  bool previous_cycle = false;  // its header is the cycle just before the active half's
  format::HalfHeader header;
  // Where its chain stops, when replayed (previous_cycle) and not connected.
  uint64_t end = 0;      // offset in the half
  uint64_t reached = 0;  // lsn of the last entry reached (first_lsn - 1 if none)
  std::string why_end;
};

Status SlotStore::Impl::replay_wal(std::vector<uint64_t>& rec_lsn, uint64_t max_rec_lsn) {
  const format::Layout& l = layout_;
  format::HalfHeader h[2];
  bool valid[2];
  for (int i = 0; i < 2; ++i) {
    WalReader r(*file_, l, i, format::kHalfHeaderSize);
    STRATA_ASSIGN_OR_RETURN(valid[i], r.read_header(&h[i]));
  }
  if (!valid[0] && !valid[1]) {
    return Error(Errc::corrupt, fmt::format("{}: neither WAL half has a valid header", path_));
  }
  const int a = !valid[1] ? 0 : !valid[0] ? 1 : (h[1].seq > h[0].seq ? 1 : 0);
  const int b = 1 - a;

  // The older half first (its entries come first) if it holds the cycle
  // before the active one: it may still be uncompacted. The switch to a
  // new half fsyncs the old one before the new header is written, so an
  // uncompacted older half is complete on disk and its chain runs into the
  // newer half's seed; one that does not connect was compacted and partly
  // reused, or is damaged (check_older_half).
  OlderHalf older;
  older.half = b;
  older.previous_cycle = valid[b] && h[b].seq + 1 == h[a].seq;
  older.header = h[b];
  bool connected = false;
  uint64_t last_lsn = 0;
  if (older.previous_cycle) {
    WalReader rb(*file_, l, b, l.half_size);
    uint64_t applied = 0;
    STRATA_TRY(replay_half(b, rec_lsn, &h[b], &rb, &applied));
    connected = rb.chain() == h[a].chain_seed && rb.last_lsn() < h[a].first_lsn;
    if (connected) {
      job_ = CompactionJob{b, h[b].seq, h[b].chain_seed, rb.position(), rb.chain(), rb.last_lsn()};
      sealed_used_ = rb.position();
      last_lsn = rb.last_lsn();
    } else if (applied > 0) {
      return Error(Errc::corrupt,
                   fmt::format("{}: WAL half {} (seq {}) does not connect to half {} (seq {}) but "
                               "holds {} entries missing from the records",
                               path_, b, h[b].seq, a, h[a].seq, applied));
    } else {
      older.end = rb.position();
      older.reached = rb.entries() > 0 ? rb.last_lsn() : h[b].first_lsn - 1;
      STRATA_ASSIGN_OR_RETURN(older.why_end, rb.why_end());
    }
  }
  WalReader ra(*file_, l, a, l.half_size);
  uint64_t applied_a = 0;
  STRATA_TRY(replay_half(a, rec_lsn, &h[a], &ra, &applied_a));
  STRATA_TRY(check_active_end(a, h[a], ra));
  if (!connected) STRATA_TRY(check_older_half(older, a, h[a], ra, max_rec_lsn));

  wal_.active = a;
  wal_.seq = h[a].seq;
  wal_.seed = h[a].chain_seed;
  wal_.written = ra.position();
  wal_.chain = ra.chain();
  wal_.half_last_lsn = ra.last_lsn();
  last_lsn = std::max({last_lsn, ra.last_lsn(), h[a].first_lsn - 1, max_rec_lsn});
  wal_.next_lsn = last_lsn + 1;
  // A writer's open fsynced the file before recovery read it: everything
  // replayed is durable. Records of durability below the active half's
  // first entry prove nothing about it, so none is owed for them; nor for
  // entries up to the last `durable` entry replayed.
  wal_.durable_lsn = opt_.read_only ? 0 : last_lsn;
  wal_.claimed_lsn = std::max(wal_.claimed_lsn, h[a].first_lsn - 1);
  last_lsn_ = last_lsn;
  active_used_ = wal_.written;
  return Status::OK();
}

Status SlotStore::Impl::replay_half(int half, std::vector<uint64_t>& rec_lsn,
                                    format::HalfHeader* header, WalReader* reader,
                                    uint64_t* applied) {
  STRATA_ASSIGN_OR_RETURN(bool valid, reader->read_header(header));
  if (!valid) {
    return Error(Errc::internal, fmt::format("{}: WAL half {} header vanished", path_, half));
  }
  for (;;) {
    format::Entry e;
    auto st = reader->next(&e);
    if (!st.ok()) return std::move(st).error().with_context(path_);
    if (*st == format::EntryStatus::end) return Status::OK();
    Status s = apply_replayed(e, rec_lsn, applied);
    if (!s.ok()) return std::move(s).error().with_context(path_);
  }
}

Status SlotStore::Impl::apply_replayed(const format::Entry& e, std::vector<uint64_t>& rec_lsn,
                                       uint64_t* applied) {
  switch (e.type) {
    case format::EntryType::marker:
      return Status::OK();
    case format::EntryType::durable:
      // What it records, and itself, need no further record.
      wal_.claimed_lsn = std::max(wal_.claimed_lsn, e.lsn);
      return Status::OK();
    case format::EntryType::intern:
      if (!table_.strings.add(e.string_id, std::string(e.str))) {
        return Error(Errc::corrupt, fmt::format("interned string {} differs between the string "
                                                "table and WAL entry lsn {}",
                                                e.string_id, e.lsn));
      }
      return Status::OK();
    case format::EntryType::put:
    case format::EntryType::erase:
      break;
  }
  uint32_t s = e.slot;
  Verdict v = judge(e, rec_lsn[s], table_.live(s), table_.gen(s));
  if (v == Verdict::stale) ++stale_;
  if (v != Verdict::apply) return Status::OK();
  ++*applied;
  if (e.type == format::EntryType::erase) {
    table_.release_raw(s);
    return Status::OK();
  }
  if (e.assign) table_.assign_raw(s, e.gen, e.key);
  return format::apply_updates(layout_, e, table_.fields(s));
}

// The active half's chain stopped at reader.position(). The bytes there were
// never fsynced (a torn tail: the normal end after a crash, or simply the
// end of what was written) unless a `durable` entry of this cycle past that
// point records a durable lsn beyond the last entry reached: the chain up
// to that lsn was on disk, and durable bytes do not change, so the chain is
// broken by damage (docs/formats/slotstore.md, "Torn tail or damage").
Status SlotStore::Impl::check_active_end(int half, const format::HalfHeader& h, WalReader& reader) {
  // Before the search moves the reader's window away from the end.
  STRATA_ASSIGN_OR_RETURN(std::string why, reader.why_end());
  const uint64_t reached = reader.entries() > 0 ? reader.last_lsn() : h.first_lsn - 1;
  STRATA_ASSIGN_OR_RETURN(auto found, reader.find_claim_after_end(reached));
  std::optional<IntactAfter> intact;
  if (found) {
    intact = IntactAfter{layout_.half_offset(half) + found->offset,
                         fmt::format("a durable entry of the same cycle (lsn {}) recording that "
                                     "every entry up to lsn {} had been fsynced",
                                     found->claim.lsn, found->claim.durable_lsn)};
  }
  return judge_tail_damage(
      damage_at(path_, layout_.half_offset(half) + reader.position(),
                fmt::format("WAL half {} (seq {}) after lsn {}: {}", half, h.seq, reached, why)),
      intact);
}

// The older half does not hold a chain running into the active half (or has
// no header of the cycle before it). It is spent — compacted, then partly
// overwritten by a reuse whose new header a crash lost — or damaged. A
// reuse needs a switch away from the active half, which happens only when
// it is full, and needs the older half compacted, which stamps its lsns on
// record copies. So if the active half still has room, or no record copy
// holds an lsn of the older half's cycle, the older half was never reused:
// it must still be whole, the active half's header (written after it was
// complete and fsynced) follows it in the WAL's sequence, and damage in it
// is corruption.
Status SlotStore::Impl::check_older_half(const OlderHalf& b, int a, const format::HalfHeader& ha,
                                         const WalReader& ra, uint64_t max_rec_lsn) {
  const format::Layout& l = layout_;
  if (ha.seq == 1) return Status::OK();  // no cycle before the first
  const bool active_has_room = ra.position() + kMarkerBytes + l.max_op_bytes <= l.half_size;
  const bool never_compacted = b.previous_cycle && max_rec_lsn < b.header.first_lsn;
  std::optional<IntactAfter> intact;
  if (active_has_room || never_compacted) {
    intact = IntactAfter{
        l.half_offset(a),
        fmt::format("the header of the next cycle (WAL half {}, seq {}), written after half {} "
                    "was complete and fsynced, and half {} was never reused since ({})",
                    a, ha.seq, b.half, b.half,
                    active_has_room ? fmt::format("half {} still has room", a)
                                    : "no record copy holds any of its entries")};
  }
  if (!b.previous_cycle) {
    return judge_tail_damage(
        damage_at(path_, l.half_offset(b.half),
                  fmt::format("WAL half {} has no valid header of seq {}", b.half, ha.seq - 1)),
        intact);
  }
  return judge_tail_damage(damage_at(path_, l.half_offset(b.half) + b.end,
                                     fmt::format("WAL half {} (seq {}) after lsn {}: {}", b.half,
                                                 b.header.seq, b.reached, b.why_end)),
                           intact);
}

}  // namespace strata::slotstore
