// The write path: validation, group commit, WAL appends, half switches.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <unordered_map>
#include <unordered_set>

#include "common/assert.h"
#include "common/endian.h"
#include "slotstore/store_impl.h"

namespace strata::slotstore {

namespace {

constexpr size_t kMaxGroupWriters = 128;
constexpr size_t kMaxGroupOps = 4096;

bool is_low(const format::Layout& l, FieldId f) {
  return l.schema.fields[f].frequency == Frequency::low;
}

// Element i of a present value of field type t (validated beforehand).
const Scalar* element_of(const FieldType& t, const Value& v, size_t i, Scalar* tmp) {
  if (t.tuple) return &v.elements()[i];
  *tmp = v.is_u64() ? Scalar(v.as_u64()) : Scalar(v.as_str());
  return tmp;
}

template <typename Where>
Status check_value(const format::Layout& l, FieldId fid, const Value& v, const Where& where) {
  const FieldSpec& f = l.schema.fields[fid];
  auto bad = [&](const std::string& why) {
    return Error(Errc::invalid_argument, fmt::format("{} field '{}': {}", where(), f.name, why));
  };
  size_t n = f.type.elements.size();
  if (f.type.tuple) {
    if (!v.is_tuple()) return bad("expects a tuple value");
    if (v.elements().size() != n) {
      return bad(fmt::format("tuple of {} elements, schema has {}", v.elements().size(), n));
    }
  } else if (v.is_tuple()) {
    return bad("expects a scalar, got a tuple");
  }
  for (size_t i = 0; i < n; ++i) {
    const Element& e = f.type.elements[i];
    bool is_num = f.type.tuple ? v.elements()[i].index() == 0 : v.is_u64();
    if (e.kind == ElementKind::u64) {
      if (!is_num) return bad(fmt::format("element {} must be a u64", i));
      continue;
    }
    if (is_num) return bad(fmt::format("element {} must be a string", i));
    size_t len = f.type.tuple ? std::get<1>(v.elements()[i]).size() : v.as_str().size();
    if (len > e.max_len) {
      return bad(
          fmt::format("element {} is {} bytes, longer than its bound {}", i, len, e.max_len));
    }
  }
  return Status::OK();
}

}  // namespace

struct SlotStore::Impl::Writer : GroupCommitWaiter {
  const WriteBatch* batch = nullptr;
  WriteOptions options;
  bool closing = false;
  Status status;
};

Status SlotStore::Impl::write_batch(const WriteBatch& batch, const WriteOptions& options) {
  STRATA_TRY(check_usable(true));
  return write_internal(batch, options, false);
}

Status SlotStore::Impl::write_internal(const WriteBatch& batch, const WriteOptions& options,
                                       bool closing) {
  Writer w;
  w.batch = &batch;
  w.options = options;
  w.closing = closing;
  std::unique_lock<std::mutex> l(queue_mu_);
  if (!writers_.join(l, &w)) return std::move(w.status);
  // This writer leads: it commits the queued batches as one group, with one
  // WAL write and at most one fsync (group commit).
  const std::vector<Writer*> group = writers_.take(kMaxGroupWriters, kMaxGroupOps,
                                                   [](const Writer& x) { return x.batch->size(); });
  l.unlock();
  commit_group(group);
  l.lock();
  writers_.release(group);
  return std::move(w.status);
}

void SlotStore::Impl::commit_group(const std::vector<Writer*>& group) {
  bool need_sync = false;
  for (Writer* x : group) {
    if (failed_) {
      x->status = fail_stopped_error();
      continue;
    }
    if (closed_ && !x->closing) {
      x->status = Error(Errc::closed, path_ + ": store is closed");
      continue;
    }
    bool durable = false;
    x->status = apply_batch(*x->batch, &durable);
    if (x->status.ok() && (durable || x->options.sync)) need_sync = true;
  }
  Status io = flush_pending();
  if (io.ok() && need_sync && wal_.unsynced > 0) {
    io = sync_file();
    if (io.ok()) {
      wal_.unsynced = 0;
      wal_.durable_lsn = wal_.next_lsn - 1;
    }
  }
  if (io.ok() && std::any_of(group.begin(), group.end(), [](Writer* x) { return x->closing; })) {
    io = close_durable();
  }
  unsynced_ = wal_.unsynced;
  if (!io.ok()) {
    // The store is fail-stopped: report it to every writer of the group
    // rather than success for data whose durability is now unknown.
    for (Writer* x : group) {
      if (x->status.ok()) x->status = io;
    }
  }
}

Status SlotStore::Impl::validate(const WriteBatch& batch, bool* durable,
                                 std::vector<uint32_t>* slots) const {
  const format::Layout& l = layout_;
  // Effects of earlier ops of this batch, so each op is checked against the
  // state it will actually see.
  std::unordered_map<std::string_view, bool> exists;
  std::unordered_set<std::string_view> new_strings;
  int64_t free_slots = table_.free_count();
  const uint32_t strings_avail = table_.strings.available();
  *durable = false;
  const auto& ops = batch.ops();
  slots->resize(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const WriteBatch::Op& op = ops[i];
    // Built only for an error message (this runs for every op).
    auto where = [&] {
      return fmt::format("{}: write_batch op {} ({} key {})", path_, i, op.erase ? "erase" : "put",
                         format::describe_key(op.key));
    };
    if (op.key.empty()) return Error(Errc::invalid_argument, where() + ": empty key");
    if (op.key.size() > l.max_key) {
      return Error(Errc::key_too_long, fmt::format("{}: key is {} bytes, the bound is {}", where(),
                                                   op.key.size(), l.max_key));
    }
    auto ov = exists.find(op.key);
    const bool changed = ov != exists.end();  // by an earlier op of the batch
    const uint32_t slot = changed ? kLookUp : table_.find(op.key).value_or(kAbsent);
    (*slots)[i] = slot;
    const bool present = changed ? ov->second : slot != kAbsent;
    if (op.erase) {
      if (!present) return Error(Errc::not_found, where() + ": no such key");
      exists[op.key] = false;
      // The slot serves later puts of this batch unless its generation is
      // used up (SlotTable retires it). A key this batch created has no
      // known slot yet: count nothing, which may only refuse a batch.
      if (slot < kAbsent && table_.gen(slot) < format::kMaxGeneration) ++free_slots;
      *durable = true;
      continue;
    }
    if (!present) {
      if (free_slots == 0) {
        return Error(Errc::store_full,
                     fmt::format("{}: all {} slots are in use (capacity is fixed at creation; "
                                 "migrate to grow it)",
                                 where(), l.slots));
      }
      --free_slots;
      exists[op.key] = true;
    }
    if (op.updates.size() > l.fields.size()) {
      return Error(Errc::invalid_argument, fmt::format("{}: {} updates for {} fields", where(),
                                                       op.updates.size(), l.fields.size()));
    }
    uint64_t seen = 0;
    for (const FieldUpdate& u : op.updates) {
      if (u.field >= l.fields.size()) {
        return Error(Errc::unknown_field, fmt::format("{}: field id {} (the schema has {} fields)",
                                                      where(), int(u.field), l.fields.size()));
      }
      if (seen & (uint64_t(1) << u.field)) {
        return Error(Errc::invalid_argument, fmt::format("{}: field '{}' updated twice", where(),
                                                         l.schema.fields[u.field].name));
      }
      seen |= uint64_t(1) << u.field;
      if (is_low(l, u.field)) *durable = true;
      if (!u.value) continue;
      STRATA_TRY(check_value(l, u.field, *u.value, where));
      const FieldType& t = l.schema.fields[u.field].type;
      for (size_t e = 0; e < t.elements.size(); ++e) {
        if (t.elements[e].kind != ElementKind::interned) continue;
        Scalar tmp;
        const std::string& s = std::get<1>(*element_of(t, *u.value, e, &tmp));
        if (table_.strings.find(s) || new_strings.count(s)) continue;
        if (new_strings.size() >= strings_avail) {
          return Error(Errc::string_table_full,
                       fmt::format("{} field '{}': the interned string table is full ({} "
                                   "strings; capacity is fixed at creation, migrate to grow it)",
                                   where(), l.schema.fields[u.field].name, l.strings));
        }
        // Views into the batch, which outlives this call.
        new_strings.insert(t.tuple ? std::string_view(std::get<1>(u.value->elements()[e]))
                                   : std::string_view(u.value->as_str()));
      }
    }
  }
  return Status::OK();
}

Status SlotStore::Impl::apply_batch(const WriteBatch& batch, bool* durable) {
  STRATA_TRY(validate(batch, durable, &op_slots_));
  const auto& ops = batch.ops();
  const size_t op_bound = layout_.max_op_bytes;
  size_t i = 0;
  while (i < ops.size()) {
    STRATA_TRY(ensure_room(kMarkerBytes + op_bound));
    append_prelude(op_bound);
    uint64_t room = layout_.half_size - wal_.written - wal_.pending.size();
    size_t k = std::max<size_t>(1, size_t(room / op_bound));
    k = std::min(k, ops.size() - i);
    std::unique_lock<std::shared_mutex> lk(mu_);
    for (size_t j = i; j < i + k; ++j) encode_op(ops[j], op_slots_[j]);
    i += k;
  }
  return Status::OK();
}

uint32_t SlotStore::Impl::append(format::EntryType type, BytesView body) {
  uint64_t lsn = wal_.next_lsn++;
  wal_.chain = format::append_entry(&wal_.pending, type, lsn, body, wal_.chain);
  wal_.half_last_lsn = lsn;
  last_lsn_ = lsn;
  return wal_.chain;
}

// Entries that go before the next op (ensure_room left room for a marker
// and one op of at most `op_bound` bytes).
void SlotStore::Impl::append_prelude(size_t op_bound) {
  if (!wal_.marker_written) {
    // The first entry of every open carries a nonce unique to this run, so
    // entries of this run never chain-match stale bytes a crashed earlier
    // run left after the same predecessor. (Uniqueness, not secrecy: clocks,
    // pid and address, mixed; nothing here can throw.)
    uint64_t x = uint64_t(std::chrono::system_clock::now().time_since_epoch().count()) ^
                 (uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()) << 17) ^
                 (uint64_t(::getpid()) << 40) ^ uint64_t(reinterpret_cast<uintptr_t>(this));
    x += 0x9e3779b97f4a7c15ull;  // splitmix64 finalizer
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    const uint64_t nonce = x ^ (x >> 31);
    Bytes body;
    ByteWriter(&body).be64(nonce);
    append(format::EntryType::marker, body);
    wal_.marker_written = true;
  }
  // Record an fsync that no `durable` entry records yet, if that still
  // leaves room for the op: it is evidence for recovery, never needed for
  // progress. No extra write: it goes out with the op.
  if (wal_.durable_lsn > wal_.claimed_lsn &&
      wal_.written + wal_.pending.size() + format::kDurableEntrySize + op_bound <=
          layout_.half_size) {
    append_durable();
  }
}

void SlotStore::Impl::append_durable() {
  append(format::EntryType::durable, format::durable_body(wal_.next_lsn, wal_.durable_lsn));
  wal_.claimed_lsn = wal_.durable_lsn;
}

// A clean close records that every entry written is durable (one more
// write and fsync, only if some durable entries are not recorded yet), so
// that damage to the last entries found by a later open is not taken for a
// torn tail.
Status SlotStore::Impl::close_durable() {
  if (wal_.durable_lsn <= wal_.claimed_lsn ||
      wal_.written + wal_.pending.size() + format::kDurableEntrySize > layout_.half_size) {
    return Status::OK();
  }
  append_durable();
  STRATA_TRY(flush_pending());
  STRATA_TRY(sync_file());
  wal_.unsynced = 0;
  return Status::OK();
}

void SlotStore::Impl::encode_op(const WriteBatch::Op& op, uint32_t slot) {
  // The ops of a batch are encoded in order, so validate's slot of a key no
  // earlier op touched is still its slot (erases and new keys of earlier
  // ops only free or take other slots).
  Bytes& body = op_body_;
  body.clear();
  ByteWriter w(&body);
  if (op.erase) {
    // Validated: the key exists.
    const uint32_t s = slot < kAbsent ? slot : *table_.find(op.key);
    w.be32(s);
    w.be32(table_.gen(s));
    append(format::EntryType::erase, body);
    table_.release(s);
    return;
  }
  std::optional<uint32_t> found;
  if (slot == kLookUp) {
    found = table_.find(op.key);
  } else if (slot != kAbsent) {
    found = slot;
  }
  uint32_t s = found ? *found : table_.pop_free();
  uint32_t gen = table_.gen(s);
  if (!found) {
    // A free slot whose generation reached the largest is never handed out
    // (SlotTable), and a larger one read from disk is corrupt (recovery).
    STRATA_ASSERT(gen < format::kMaxGeneration, "slot generation overflow");
    ++gen;
  }
  w.be32(s);
  w.be32(gen);
  w.u8(found ? 0 : format::kPutAssign);
  if (!found) {
    w.u8(uint8_t(op.key.size()));
    w.bytes(op.key);
  }
  w.u8(uint8_t(op.updates.size()));
  size_t updates_at = body.size();
  for (const FieldUpdate& u : op.updates) {
    w.u8(u.field);
    w.u8(u.value ? 1 : 0);
    if (!u.value) continue;
    const FieldType& t = layout_.schema.fields[u.field].type;
    for (size_t e = 0; e < t.elements.size(); ++e) {
      Scalar tmp;
      const Scalar& v = *element_of(t, *u.value, e, &tmp);
      switch (t.elements[e].kind) {
        case ElementKind::u64:
          w.be64(std::get<0>(v));
          break;
        case ElementKind::bytes:
          w.be16(uint16_t(std::get<1>(v).size()));
          w.bytes(std::get<1>(v));
          break;
        case ElementKind::interned: {
          const std::string& str = std::get<1>(v);
          std::optional<uint32_t> id = table_.strings.find(str);
          if (!id) {
            // Validated: there is room. The intern entry precedes the put
            // in the chain, so the string is present wherever the put is.
            id = table_.strings.next_free();
            STRATA_ASSERT(id.has_value(), "string table full after validation");
            table_.strings.add(*id, str);
            Bytes ib;
            ByteWriter iw(&ib);
            iw.be32(*id);
            iw.be16(uint16_t(str.size()));
            iw.bytes(str);
            append(format::EntryType::intern, ib);
          }
          w.be32(*id);
          break;
        }
      }
    }
  }
  append(format::EntryType::put, body);
  if (!found) table_.assign(s, gen, op.key);
  // Memory takes the change through the same decoder recovery uses.
  format::Entry e;
  e.type = format::EntryType::put;
  e.lsn = wal_.half_last_lsn;
  e.slot = s;
  e.gen = gen;
  e.n_updates = uint8_t(op.updates.size());
  e.updates = BytesView(body).substr(updates_at);
  Status st = format::apply_updates(layout_, e, table_.fields(s));
  STRATA_ASSERT(st.ok(), "a validated put failed to apply");
}

Status SlotStore::Impl::ensure_room(size_t bytes) {
  if (wal_.written + wal_.pending.size() + bytes <= layout_.half_size) return Status::OK();
  return switch_half();
}

Status SlotStore::Impl::flush_pending() {
  if (wal_.pending.empty()) return Status::OK();
  if (failed_) return fail_stopped_error();
  Status s = file_->write_at(layout_.half_offset(wal_.active) + wal_.written, wal_.pending);
  if (!s.ok()) {
    // Memory already holds these changes; the file does not. Continuing
    // would serve and later compact state that is not in the WAL.
    fail_stop(std::move(s).error().with_context("writing the WAL"));
    return fail_stopped_error();
  }
  wal_.written += wal_.pending.size();
  wal_.unsynced += wal_.pending.size();
  wal_.pending.clear();
  active_used_ = wal_.written;
  unsynced_ = wal_.unsynced;
  return Status::OK();
}

Status SlotStore::Impl::switch_half() {
  STRATA_TRY(flush_pending());
  // Seal: the full half is durable before the next half's header can reach
  // the disk (recovery relies on this to tell a compacted half from one
  // that lost its tail).
  STRATA_TRY(sync_file());
  wal_.unsynced = 0;
  STRATA_TRY(wait_half_free());
  CompactionJob job{wal_.active, wal_.seq, wal_.seed, wal_.written, wal_.chain, wal_.half_last_lsn};
  wal_.active = 1 - wal_.active;
  wal_.seq += 1;
  wal_.seed = wal_.chain;
  wal_.written = 0;
  wal_.half_last_lsn = 0;
  char h[format::kHalfHeaderSize];
  format::encode_half_header(wal_.active, format::HalfHeader{wal_.seq, wal_.next_lsn, wal_.seed},
                             h);
  wal_.pending.assign(h, sizeof h);
  // The seal made every entry so far durable; the new header is the record
  // of that (recovery: check_older_half), so no `durable` entry is owed.
  wal_.durable_lsn = wal_.claimed_lsn = wal_.next_lsn - 1;
  active_used_ = 0;
  sealed_used_ = job.end;
  ++switches_;
  std::unique_lock<std::mutex> l(comp_mu_);
  job_ = job;
  comp_state_ = CompState::idle;
  if (opt_.background_compaction) {
    comp_cv_.notify_all();
  } else {
    // A failure is recorded and retried when the half is needed again.
    run_compaction(l);
  }
  return Status::OK();
}

Status SlotStore::Impl::wait_half_free() {
  std::unique_lock<std::mutex> l(comp_mu_);
  bool retried = false;
  bool counted = false;
  while (job_) {
    if (failed_) return fail_stopped_error();
    if (stop_) return Error(Errc::closed, path_ + ": store is closing");
    if (comp_state_ == CompState::failed) {
      if (retried) {
        Error e = *last_comp_error_;
        return Error(e.code, fmt::format("{}: the WAL is full and compaction of the sealed half "
                                         "failed twice: {}",
                                         path_, e.message));
      }
      retried = true;
      comp_state_ = CompState::idle;
      comp_cv_.notify_all();
    }
    if (comp_state_ == CompState::idle && !opt_.background_compaction) {
      run_compaction(l);
      continue;
    }
    if (!counted) {
      ++compaction_waits_;
      counted = true;
    }
    comp_cv_.wait(l);
  }
  return Status::OK();
}

}  // namespace strata::slotstore
