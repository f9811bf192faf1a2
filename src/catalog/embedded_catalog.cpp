#include "catalog/embedded_catalog.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/crc32c.h"
#include "common/stream_name.h"
#include "slotstore/format.h"

namespace strata::catalog {

namespace {

using slotstore::FieldId;
using slotstore::FieldType;
using slotstore::Frequency;
using slotstore::Value;

constexpr FieldId kEpoch = 0;
constexpr FieldId kRevision = 1;
constexpr FieldId kRootKey = 2;
// The catalog's own record. Keys starting with '/' are the catalog's:
// record_key() never gives a stream one.
constexpr std::string_view kFloorKey = "/revision_floor";

// One slot holds the floor record.
constexpr uint32_t kMaxCapacity = slotstore::format::kMaxSlots - 1;

// A stream's record key: its name, with a leading '/' stored as byte 0xFF
// (which UTF-8, and so a stream name, never holds). A stream named
// "/revision_floor" then cannot take the floor's record, the key is no
// longer than the name (the slotstore's 255-byte bound), and names of
// before, which held no '/', keep their keys.
constexpr char kSlashMark = char(0xFF);

std::string record_key(std::string_view stream) {
  std::string k(stream);
  if (!k.empty() && k[0] == '/') k[0] = kSlashMark;
  return k;
}

std::string stream_of_key(std::string_view key) {
  std::string s(key);
  if (!s.empty() && s[0] == kSlashMark) s[0] = '/';
  return s;
}

// The WAL of a file holding `capacity` streams: 1 KiB per stream within
// [64 KiB, the configured WAL] — a small catalog compacts a small file
// (every slot), so a small WAL costs no more compactions per write.
uint64_t wal_bytes_for(uint32_t capacity, uint64_t configured) {
  return std::clamp<uint64_t>(uint64_t(capacity) << 10, std::min<uint64_t>(64 << 10, configured),
                              configured);
}

}  // namespace

slotstore::Schema EmbeddedCatalog::schema() {
  slotstore::Schema s;
  s.max_key_len = uint8_t(kMaxStreamNameBytes);
  s.fields = {
      {"epoch", FieldType::u64(), Frequency::low},
      {"revision", FieldType::u64(), Frequency::low},
      {"root_key", FieldType::bytes(uint16_t(kMaxRootKeyBytes)), Frequency::low},
  };
  return s;
}

Result<std::unique_ptr<EmbeddedCatalog>> EmbeddedCatalog::open(
    FileSystem& fs, const std::string& dir, const EmbeddedCatalogOptions& options) {
  const std::string path = path_join(dir, kCatalogFile);
  if (options.capacity < 1 || options.capacity > kMaxCapacity) {
    return Error(Errc::invalid_argument,
                 fmt::format("catalog {}: catalog.capacity = {}: must be within 1..{}", path,
                             options.capacity, kMaxCapacity));
  }
  if (!options.read_only && options.create_if_missing) {
    if (Status s = create_dirs(fs, dir); !s.ok()) {
      return std::move(s).error().with_context("catalog: creating directory " + dir);
    }
  }
  // Used when the file is created: it starts small and grows (grow()).
  const uint32_t initial = std::clamp<uint32_t>(options.initial_capacity, 1, options.capacity);
  slotstore::Options so;
  so.slots = initial + 1;
  so.strings = 0;
  so.wal_bytes = wal_bytes_for(initial, options.wal_bytes);
  so.create_if_missing = options.create_if_missing && !options.read_only;
  so.read_only = options.read_only;
  so.background_compaction = options.background_compaction;
  auto store = slotstore::SlotStore::open(fs, path, schema(), so);
  if (!store.ok()) {
    Error e = std::move(store).error();
    if (e.code == Errc::not_found) {
      return Error(Errc::not_found, fmt::format("catalog {}: no such file", path));
    }
    return std::move(e).with_context("opening catalog " + path);
  }
  std::unique_ptr<EmbeddedCatalog> c(
      new EmbeddedCatalog(fs, path, options, so, std::move(store).value()));
  if (!options.read_only) {
    // What a growth that crashed left beside the file (this process holds
    // the file's lock now: nobody else is growing it).
    for (const std::string& p : {path + ".migrating", path + ".migrating.creating"}) {
      Status s = fs.remove(p);
      if (!s.ok() && s.code() != Errc::not_found) {
        return std::move(s).error().with_context("catalog " + path + ": removing " + p);
      }
    }
  }
  auto floor = c->store_->read(kFloorKey);
  if (floor.ok()) {
    const auto& v = (*floor)[kRevision];
    if (!v) {
      return Error(Errc::corrupt,
                   fmt::format("catalog {}: the {} record has no revision", path, kFloorKey));
    }
    c->revision_floor_ = v->as_u64();
    c->floor_stored_ = true;
  } else if (floor.code() != Errc::not_found) {
    return std::move(floor).error().with_context("opening catalog " + path);
  } else if (!options.read_only) {
    // A new file: the floor's slot is taken now, so a full catalog can
    // still record the floor of a remove.
    Status s = c->store_->put(kFloorKey, {slotstore::set(kRevision, Value::u64(0))});
    if (!s.ok()) return std::move(s).error().with_context("opening catalog " + path);
    c->floor_stored_ = true;
  }
  return c;
}

EmbeddedCatalog::EmbeddedCatalog(FileSystem& fs, std::string path,
                                 const EmbeddedCatalogOptions& options,
                                 slotstore::Options store_options,
                                 std::unique_ptr<slotstore::SlotStore> store)
    : fs_(fs),
      path_(std::move(path)),
      read_only_(options.read_only),
      options_(options),
      store_options_(store_options),
      store_(std::move(store)) {}

EmbeddedCatalog::~EmbeddedCatalog() {
  Status s = close();
  if (!s.ok()) spdlog::error("closing catalog {}: {}", path_, s.to_string());
}

Status EmbeddedCatalog::close() {
  std::unique_lock g(grow_mu_);
  return store_->close();
}

uint32_t EmbeddedCatalog::capacity_locked() const {
  return store_->info().slots_total - 1;
}

uint64_t EmbeddedCatalog::current_floor() const {
  std::lock_guard fl(floor_mu_);
  return revision_floor_;
}

uint64_t EmbeddedCatalog::growths() const {
  std::shared_lock g(grow_mu_);
  return growths_;
}

Status EmbeddedCatalog::grow(uint32_t full_capacity, std::string_view stream) {
  std::unique_lock g(grow_mu_);
  const uint32_t now = capacity_locked();
  if (now > full_capacity) return Status::OK();  // another create grew it
  const uint32_t to =
      uint32_t(std::min<uint64_t>(options_.capacity, uint64_t(now) * kCatalogGrowthFactor));
  if (to <= now) {
    return Error(Errc::store_full,
                 fmt::format("catalog {}: create of stream \"{}\": the catalog is full: {} "
                             "streams, the most catalog.capacity allows",
                             path_, printable_name(stream), now));
  }
  if (Status s = store_->close(); !s.ok()) {
    return std::move(s).error().with_context(
        fmt::format("catalog {}: closing it to grow from {} to {} streams", path_, now, to));
  }
  slotstore::Options grown = store_options_;
  grown.slots = to + 1;
  grown.wal_bytes = wal_bytes_for(to, options_.wal_bytes);
  // Crash-atomic: the old file stays whole until the new one replaces it
  // (and whole after a failure, e.g. a full disk).
  Status migrated = slotstore::SlotStore::migrate(fs_, path_, schema(), grown);
  slotstore::Options reopen = store_options_;
  reopen.create_if_missing = false;
  auto again = slotstore::SlotStore::open(fs_, path_, schema(), reopen);
  if (!again.ok()) {
    // store_ stays closed: every later call fails, naming the file.
    return std::move(again).error().with_context(
        fmt::format("catalog {}: reopening it after growing from {} streams", path_, now));
  }
  store_ = std::move(again).value();
  if (!migrated.ok()) {
    return std::move(migrated).error().with_context(fmt::format(
        "catalog {}: growing from {} to {} streams (it stays at {})", path_, now, to, now));
  }
  growths_ += 1;
  spdlog::info("catalog {}: grew from {} to {} streams ({} bytes)", path_, now, to,
               store_->info().file_size);
  return Status::OK();
}

std::mutex& EmbeddedCatalog::stripe(std::string_view stream) {
  return stripes_[crc32c::value(stream) % kStripes];
}

Status EmbeddedCatalog::check_writable(std::string_view what, std::string_view stream) const {
  if (!read_only_) return Status::OK();
  return Error(Errc::invalid_argument,
               fmt::format("catalog {}: {} of stream \"{}\": the catalog is open read-only", path_,
                           what, printable_name(stream)));
}

Error EmbeddedCatalog::wrap(Error e, std::string_view what, std::string_view stream) const {
  if (e.code == Errc::store_full) {
    uint32_t capacity = store_->info().slots_total - 1;
    return Error(Errc::store_full,
                 fmt::format("catalog {}: {} of stream \"{}\": the catalog is full ({} streams, "
                             "catalog.capacity): {}",
                             path_, what, printable_name(stream), capacity, e.message));
  }
  return std::move(e).with_context(
      fmt::format("catalog {}: {} of stream \"{}\"", path_, what, printable_name(stream)));
}

Result<StreamEntry> EmbeddedCatalog::decode(std::string_view stream,
                                            const slotstore::Record& rec) const {
  const auto& epoch = rec[kEpoch];
  const auto& revision = rec[kRevision];
  if (!epoch || !revision || revision->as_u64() == 0) {
    return Error(Errc::corrupt,
                 fmt::format("catalog {}: stream \"{}\": record without {}", path_,
                             printable_name(stream), !epoch ? "an epoch" : "a revision"));
  }
  StreamEntry e;
  e.stream = std::string(stream);
  e.epoch = epoch->as_u64();
  e.revision = revision->as_u64();
  if (const auto& root = rec[kRootKey]) e.root_key = root->as_str();
  return e;
}

Result<std::optional<StreamEntry>> EmbeddedCatalog::read(std::string_view stream) const {
  auto rec = store_->read(record_key(stream));
  if (!rec.ok()) {
    if (rec.code() == Errc::not_found) return std::optional<StreamEntry>();
    return wrap(std::move(rec).error(), "read", stream);
  }
  STRATA_ASSIGN_OR_RETURN(StreamEntry e, decode(stream, *rec));
  return std::optional<StreamEntry>(std::move(e));
}

Status EmbeddedCatalog::store_entry(const StreamEntry& e) {
  std::vector<slotstore::FieldUpdate> ups = {
      slotstore::set(kEpoch, Value::u64(e.epoch)),
      slotstore::set(kRevision, Value::u64(e.revision)),
      e.root_key.empty() ? slotstore::clear(kRootKey)
                         : slotstore::set(kRootKey, Value::str(e.root_key)),
  };
  // Low-frequency fields: the slotstore fsyncs before it returns.
  return store_->put(record_key(e.stream), std::move(ups));
}

Status EmbeddedCatalog::erase_entry(const StreamEntry& removed) {
  std::lock_guard lock(floor_mu_);
  const uint64_t floor = floor_after_remove(revision_floor_, removed);
  // The floor first: after a crash between the two (a batch is atomic per
  // key only), the entry is still there with the floor already raised,
  // which is harmless; the opposite order could let the entry come back at
  // a revision it already had.
  slotstore::WriteBatch b;
  b.put(kFloorKey, {slotstore::set(kRevision, Value::u64(floor))});
  b.erase(record_key(removed.stream));
  STRATA_TRY(store_->write_batch(b, slotstore::WriteOptions{true}));
  revision_floor_ = floor;
  return Status::OK();
}

Status EmbeddedCatalog::write(const Decision& d) {
  switch (d.write) {
    case Write::none:
      return Status::OK();
    case Write::store:
      return store_entry(d.entry);
    case Write::erase:
      return erase_entry(d.entry);
  }
  return Status::OK();
}

Result<StreamEntry> EmbeddedCatalog::create(std::string_view stream, uint64_t epoch) {
  STRATA_TRY(validate_stream_name(stream));
  STRATA_TRY(check_epoch(stream, epoch, "create"));
  STRATA_TRY(check_writable("create", stream));
  for (;;) {
    uint32_t full = 0;
    {
      std::shared_lock g(grow_mu_);
      std::lock_guard lock(stripe(stream));
      STRATA_ASSIGN_OR_RETURN(auto stored, read(stream));
      const uint64_t floor = current_floor();
      auto e = decide_create(stored, stream, epoch, floor);
      if (!e.ok()) return std::move(e).error().with_context("catalog " + path_);
      assert_write(stored, 0, Decision{{}, Write::store, *e}, floor);
      Status s = store_entry(*e);
      if (s.ok()) return e;
      if (s.code() != Errc::store_full) return wrap(std::move(s).error(), "create", stream);
      full = capacity_locked();
    }
    // Full: grown (or found grown by another create), then tried again.
    STRATA_TRY(grow(full, stream));
  }
}

Result<StreamEntry> EmbeddedCatalog::get(std::string_view stream) {
  STRATA_TRY(validate_stream_name(stream));
  std::shared_lock g(grow_mu_);
  std::lock_guard lock(stripe(stream));
  STRATA_ASSIGN_OR_RETURN(auto stored, read(stream));
  if (!stored) {
    return Error(Errc::not_found,
                 fmt::format("catalog {}: no stream \"{}\"", path_, printable_name(stream)));
  }
  return std::move(*stored);
}

Result<std::vector<StreamEntry>> EmbeddedCatalog::list() {
  // Every stripe, in index order (the only place that takes more than one),
  // so no entry is seen before its write is durable.
  std::shared_lock g(grow_mu_);
  std::array<std::unique_lock<std::mutex>, kStripes> locks;
  for (size_t i = 0; i < kStripes; ++i) locks[i] = std::unique_lock(stripes_[i]);
  auto all = store_->read_all();
  if (!all.ok()) return std::move(all).error().with_context("catalog " + path_ + ": list");
  std::vector<StreamEntry> out;
  out.reserve(all->size());
  for (const auto& [key, rec] : *all) {
    if (key == kFloorKey) continue;
    STRATA_ASSIGN_OR_RETURN(StreamEntry e, decode(stream_of_key(key), rec));
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(),
            [](const StreamEntry& a, const StreamEntry& b) { return a.stream < b.stream; });
  return out;
}

Result<PutResult> EmbeddedCatalog::put(std::string_view stream, std::string_view root_key,
                                       uint64_t epoch, uint64_t expected_revision) {
  STRATA_TRY(check_put_args(stream, root_key, epoch));
  if (root_key.size() > kMaxRootKeyBytes) {
    return Error(Errc::invalid_argument,
                 fmt::format("catalog {}: put of stream \"{}\": root key is {} bytes; the "
                             "embedded catalog stores at most {} (kMaxRootKeyBytes)",
                             path_, printable_name(stream), root_key.size(), kMaxRootKeyBytes));
  }
  STRATA_TRY(check_writable("put", stream));
  std::shared_lock g(grow_mu_);
  std::lock_guard lock(stripe(stream));
  STRATA_ASSIGN_OR_RETURN(auto stored, read(stream));
  const uint64_t floor = current_floor();
  auto d = decide_put(stored, stream, root_key, epoch, expected_revision, floor);
  if (!d.ok()) return std::move(d).error().with_context("catalog " + path_);
  assert_write(stored, expected_revision, *d, floor);
  if (Status s = write(*d); !s.ok()) return wrap(std::move(s).error(), "put", stream);
  return d->result;
}

Result<PutResult> EmbeddedCatalog::bump_epoch(std::string_view stream, uint64_t expected_revision,
                                              uint64_t min_epoch) {
  STRATA_TRY(validate_stream_name(stream));
  STRATA_TRY(check_writable("bump_epoch", stream));
  std::shared_lock g(grow_mu_);
  std::lock_guard lock(stripe(stream));
  STRATA_ASSIGN_OR_RETURN(auto stored, read(stream));
  auto d = decide_bump_epoch(stored, expected_revision, min_epoch);
  if (!d.ok()) return std::move(d).error().with_context("catalog " + path_);
  assert_write(stored, expected_revision, *d, 0);
  if (Status s = write(*d); !s.ok()) return wrap(std::move(s).error(), "bump_epoch", stream);
  return d->result;
}

Result<PutResult> EmbeddedCatalog::remove(std::string_view stream, uint64_t expected_revision) {
  STRATA_TRY(validate_stream_name(stream));
  STRATA_TRY(check_writable("remove", stream));
  std::shared_lock g(grow_mu_);
  std::lock_guard lock(stripe(stream));
  STRATA_ASSIGN_OR_RETURN(auto stored, read(stream));
  Decision d = decide_remove(stored, expected_revision);
  assert_write(stored, expected_revision, d, 0);
  if (Status s = write(d); !s.ok()) return wrap(std::move(s).error(), "remove", stream);
  return d.result;
}

EmbeddedCatalogInfo EmbeddedCatalog::info() const {
  std::shared_lock g(grow_mu_);
  slotstore::Info i = store_->info();
  EmbeddedCatalogInfo out;
  out.path = path_;
  out.capacity = i.slots_total - 1;
  out.streams = i.slots_used - (floor_stored_ ? 1 : 0);
  {
    std::lock_guard fl(floor_mu_);
    out.revision_floor = revision_floor_;
  }
  out.file_bytes = i.file_size;
  out.wal_bytes = i.wal_bytes_total;
  out.wal_bytes_used = i.wal_bytes_used;
  out.compactions = i.compactions;
  out.fail_stopped = i.fail_stopped;
  out.fail_stop_reason = i.fail_stop_reason;
  return out;
}

}  // namespace strata::catalog
