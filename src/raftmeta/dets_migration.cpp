#include "raftmeta/dets_migration.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <unordered_set>

#include "common/publish_file.h"
#include "raftmeta/dets/ra_meta_rows.h"
#include "raftmeta/meta_change.h"
#include "slotstore/slotstore.h"

namespace strata::raftmeta {

namespace {

// Rows per write_batch (each batch is one WAL write and one fsync).
constexpr size_t kBatchRows = 4096;
// Progress is reported every this many rows.
constexpr uint64_t kProgressEvery = 4096;

ServerMeta meta_of(const dets::RaMetaRow& r) {
  ServerMeta m;
  m.current_term = r.current_term;
  m.last_applied = r.last_applied;
  switch (r.voted_for.form) {
    case dets::VotedFor::Form::none:
      break;
    case dets::VotedFor::Form::bare_name:
      m.voted_for = VotedFor::bare(r.voted_for.name);
      break;
    case dets::VotedFor::Form::server_id:
      m.voted_for = VotedFor::server(r.voted_for.name, r.voted_for.node);
      break;
  }
  return m;
}

// What the store needs to hold every row.
struct Sizing {
  uint64_t rows = 0;
  size_t max_id = 0;
  size_t max_name = 0;
  size_t max_node = 0;
  std::unordered_set<std::string> nodes;
};

Status remove_if_present(FileSystem& fs, const std::string& path,
                         std::vector<std::string>* removed) {
  Status s = fs.remove(path);
  if (s.ok()) {
    if (removed) removed->push_back(path);
    return Status::OK();
  }
  if (s.code() == Errc::not_found) return Status::OK();
  // Proceeding over a stale temp file could publish it: fail instead.
  return std::move(s).error().with_context("removing the leftover " + path);
}

// Removes the temp files a crashed migration or store creation can leave.
Status remove_leftovers(FileSystem& fs, const std::string& dir, std::vector<std::string>* removed) {
  for (const std::string& p :
       {migrating_path(dir), migrating_path(dir) + ".creating", store_path(dir) + ".creating"}) {
    STRATA_TRY(remove_if_present(fs, p, removed));
  }
  return Status::OK();
}

Result<Sizing> size_rows(dets::RaMetaReader& reader, const std::string& dets,
                         const MigrationProgress& progress) {
  Sizing z;
  const uint64_t total = reader.info().object_count;
  STRATA_TRY(reader.for_each([&](const dets::RaMetaRow& r, uint64_t i) -> Status {
    if (r.uid.empty() || r.uid.size() > slotstore::kMaxKeyLen) {
      return Error(
          Errc::schema_mismatch,
          fmt::format("{}: row {} has uid {} of {} bytes; raftmeta server ids are 1..{} "
                      "bytes",
                      dets, i, dets::describe_uid(r.uid), r.uid.size(), slotstore::kMaxKeyLen));
    }
    z.max_id = std::max(z.max_id, r.uid.size());
    z.max_name = std::max(z.max_name, r.voted_for.name.size());
    if (r.voted_for.form == dets::VotedFor::Form::server_id) {
      z.max_node = std::max(z.max_node, r.voted_for.node.size());
      z.nodes.insert(r.voted_for.node);
    }
    ++z.rows;
    if (progress && z.rows % kProgressEvery == 0) progress("sizing", z.rows, total);
    return Status::OK();
  }));
  if (progress) progress("sizing", z.rows, total);
  return z;
}

// The capacity of the new store: `opt`, raised where the rows need more.
Result<StoreOptions> fit(const StoreOptions& opt, const Sizing& z, const std::string& dets) {
  StoreOptions o = opt;
  constexpr uint64_t kMaxCapacity = 1u << 24;
  if (z.rows > opt.capacity) {
    // Room to grow after the migration, as the configured capacity would give.
    o.capacity = uint32_t(std::min<uint64_t>(kMaxCapacity, z.rows + z.rows / 4 + 16));
    if (z.rows > o.capacity) {
      return Error(Errc::store_full, fmt::format("{}: {} rows, a raftmeta store holds at most {}",
                                                 dets, z.rows, kMaxCapacity));
    }
  }
  if (z.nodes.size() * 2 > opt.node_names) {
    o.node_names = uint32_t(std::min<uint64_t>(kMaxCapacity, z.nodes.size() * 2));
  }
  o.bounds.max_id_bytes = std::max<uint32_t>(o.bounds.max_id_bytes, uint32_t(z.max_id));
  o.bounds.max_name_bytes = std::max<uint32_t>(o.bounds.max_name_bytes, uint32_t(z.max_name));
  o.bounds.max_node_bytes = std::max<uint32_t>(o.bounds.max_node_bytes, uint32_t(z.max_node));
  if (Status s = validate(o.bounds); !s.ok()) {
    return std::move(s).error().with_context(dets + ": the rows do not fit a raftmeta store");
  }
  if (!(o.bounds == opt.bounds) || o.capacity != opt.capacity || o.node_names != opt.node_names) {
    spdlog::info(
        "raftmeta migration of {}: store created with capacity {} (configured {}), node names "
        "{} ({}), id/name/node bounds {}/{}/{} bytes ({}/{}/{}) to fit {} rows",
        dets, o.capacity, opt.capacity, o.node_names, opt.node_names, o.bounds.max_id_bytes,
        o.bounds.max_name_bytes, o.bounds.max_node_bytes, opt.bounds.max_id_bytes,
        opt.bounds.max_name_bytes, opt.bounds.max_node_bytes, z.rows);
  }
  return o;
}

// Compares every row of `reader` with `store`; conflict naming the first
// difference. `what` names the store in messages.
Status compare_rows(dets::RaMetaReader& reader, const std::string& dets,
                    const slotstore::SlotStore& store, const std::string& what,
                    const MigrationProgress& progress) {
  const uint64_t total = reader.info().object_count;
  const uint64_t servers = store.info().slots_used;
  if (servers != total) {
    return Error(Errc::conflict,
                 fmt::format("{} holds {} servers, {} has {} rows", what, servers, dets, total));
  }
  uint64_t done = 0;
  STRATA_TRY(reader.for_each([&](const dets::RaMetaRow& r, uint64_t) -> Status {
    const ServerMeta want = meta_of(r);
    auto rec = r.uid.size() <= store.schema().max_key_len
                   ? store.read(r.uid)
                   : Result<slotstore::Record>(Error(Errc::not_found, "id too long"));
    if (!rec.ok()) {
      if (rec.code() != Errc::not_found) return std::move(rec).error();
      return Error(Errc::conflict, fmt::format("{}: server {} of {} is missing", what,
                                               dets::describe_uid(r.uid), dets));
    }
    STRATA_ASSIGN_OR_RETURN(ServerMeta got, decode_record(*rec, r.uid, what));
    if (!(got == want)) {
      return Error(Errc::conflict,
                   fmt::format("{}: server {} holds [{}], {} has [{}]", what,
                               dets::describe_uid(r.uid), got.to_string(), dets, want.to_string()));
    }
    if (progress && ++done % kProgressEvery == 0) progress("verifying", done, total);
    return Status::OK();
  }));
  if (progress) progress("verifying", total, total);
  return Status::OK();
}

// Steps 3-4: builds the store in the temp file and renames it into place.
Status build_store(FileSystem& fs, dets::RaMetaReader& reader, const std::string& dets,
                   const std::string& dir, const StoreOptions& o,
                   const MigrationProgress& progress) {
  const std::string tmp = migrating_path(dir);
  slotstore::Options so;
  so.slots = o.capacity;
  so.strings = o.node_names;
  so.wal_bytes = o.wal_bytes;
  so.create_if_missing = true;
  so.error_if_exists = true;
  so.compaction_buffer_bytes = o.compaction_buffer_bytes;
  // The writer compacts a full WAL half itself before going on: a
  // migration larger than the WAL proceeds in steps, deterministically.
  so.background_compaction = false;
  // The caller holds <dir>/LOCK (lock_store_dir), which guards every file
  // in the directory.
  so.lock = false;
  {
    STRATA_ASSIGN_OR_RETURN(auto store,
                            slotstore::SlotStore::open(fs, tmp, make_schema(o.bounds), so));
    const uint64_t total = reader.info().object_count;
    slotstore::WriteBatch batch;
    uint64_t done = 0;
    auto flush = [&]() -> Status {
      if (batch.empty()) return Status::OK();
      STRATA_TRY(store->write_batch(batch));
      done += batch.size();
      batch.clear();
      if (progress) progress("writing", done, total);
      return Status::OK();
    };
    STRATA_TRY(reader.for_each([&](const dets::RaMetaRow& r, uint64_t) -> Status {
      const ServerMeta m = meta_of(r);
      // A new key starts with every field absent: set only the present ones.
      batch.put(r.uid, field_updates(m, diff(ServerMeta{}, m)));
      if (batch.size() >= kBatchRows) return flush();
      return Status::OK();
    }));
    STRATA_TRY(flush());
    // Read back what was written before it replaces anything.
    STRATA_TRY(compare_rows(reader, dets, *store, tmp, progress));
    STRATA_TRY(store->close());
  }
  return rename_durable(fs, tmp, store_path(dir));
}

Status retire(FileSystem& fs, const std::string& dets) {
  return rename_durable(fs, dets, dets + kRetiredSuffix);
}

}  // namespace

std::string_view action_name(MigrationReport::Action a) {
  switch (a) {
    case MigrationReport::Action::none:
      return "none";
    case MigrationReport::Action::migrated:
      return "migrated";
    case MigrationReport::Action::retired_only:
      return "retired_only";
  }
  return "?";
}

Status compare_with_dets(FileSystem& fs, const std::string& dets, const std::string& store) {
  STRATA_ASSIGN_OR_RETURN(auto reader, dets::RaMetaReader::open(fs, dets));
  slotstore::Options so;
  so.read_only = true;
  so.create_if_missing = false;
  STRATA_ASSIGN_OR_RETURN(auto s, slotstore::SlotStore::open_existing(fs, store, so));
  STRATA_TRY(bounds_of(s->schema(), store));
  return compare_rows(*reader, dets, *s, store, nullptr);
}

Result<MigrationReport> migrate_dets(FileSystem& fs, const std::string& dets,
                                     const std::string& dir, const StoreOptions& opt,
                                     const MigrationProgress& progress) {
  auto ctx = [&](Error e) { return std::move(e).with_context("raftmeta migration of " + dets); };
  MigrationReport rep;
  rep.source = dets;
  if (Status s = remove_leftovers(fs, dir, &rep.removed_leftovers); !s.ok()) {
    return ctx(std::move(s).error());
  }
  for (const auto& p : rep.removed_leftovers) {
    spdlog::warn("raftmeta: removed {} left by an interrupted migration or store creation", p);
  }
  const bool have_store = exists(fs, store_path(dir));
  auto st = fs.stat(dets);
  if (!st.ok()) {
    if (st.code() == Errc::not_found) return rep;  // nothing to migrate
    return ctx(std::move(st).error());
  }
  rep.source_bytes = st->size;

  if (have_store) {
    // Both present: the crash window between the two renames, if they hold
    // the same servers.
    if (Status s = compare_with_dets(fs, dets, store_path(dir)); !s.ok()) {
      Error e = std::move(s).error();
      if (e.code == Errc::conflict) {
        e.message += fmt::format(
            "; both {} and {} exist but differ, so the store was not built from this file "
            "(was an older Ra run after the migration?). Nothing was changed: move {} away to "
            "keep the store, or move the store away to migrate the file again",
            store_path(dir), dets, dets);
      }
      return ctx(std::move(e));
    }
    if (Status s = retire(fs, dets); !s.ok()) return ctx(std::move(s).error());
    spdlog::info("raftmeta: {} already migrated into {}; retired it to {}{}", dets, store_path(dir),
                 dets, kRetiredSuffix);
    rep.action = MigrationReport::Action::retired_only;
    return rep;
  }

  auto reader = dets::RaMetaReader::open(fs, dets);
  if (!reader.ok()) return ctx(std::move(reader).error());
  rep.rows = (*reader)->info().object_count;
  rep.source_closed_properly = (*reader)->info().closed_properly;
  auto sizing = size_rows(**reader, dets, progress);
  if (!sizing.ok()) return ctx(std::move(sizing).error());
  auto o = fit(opt, *sizing, dets);
  if (!o.ok()) return ctx(std::move(o).error());
  rep.created = *o;

  if (Status s = build_store(fs, **reader, dets, dir, *o, progress); !s.ok()) {
    // Nothing was published; the DETS file is untouched. Best effort: the
    // next attempt removes the temp file anyway.
    std::vector<std::string> ignored;
    Status rm = remove_leftovers(fs, dir, &ignored);
    if (!rm.ok()) spdlog::warn("raftmeta: {}", rm.to_string());
    return ctx(std::move(s).error());
  }
  if (Status s = retire(fs, dets); !s.ok()) {
    return ctx(std::move(s).error().with_context(
        "the store is complete but the source could not be retired (the next start retries)"));
  }
  spdlog::info("raftmeta: migrated {} rows from {} into {}; source retired to {}{}", rep.rows, dets,
               store_path(dir), dets, kRetiredSuffix);
  rep.action = MigrationReport::Action::migrated;
  return rep;
}

}  // namespace strata::raftmeta
