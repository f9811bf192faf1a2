// EmbeddedCatalog: the single-node catalog, the default. One slotstore file,
// <dir>/catalog.slots, one record per stream (docs/formats/catalog.md, "Embedded backend"):
//
//   key          the stream name (1..255 bytes)
//   0 epoch      u64                        low
//   1 revision   u64                        low
//   2 root_key   bytes(kMaxRootKeyBytes)    low   absent before the first persist
//
// plus one reserved record, key "/revision_floor" (not a valid stream name),
// whose revision field is the revision floor of entry_rules.h.
//
// Durability: every field is low frequency, so the slotstore fsyncs each
// write before it returns; every ok, and every created or removed entry, is
// durable when the call returns. A crash at any instant (kill -9 or power
// loss) leaves the state after some prefix of the calls, including every
// acknowledged one; a revision never goes backwards.
//
// Concurrency: the slotstore takes an exclusive lock on
// <dir>/catalog.slots.lock, so one writer process per file (a second one
// gets Errc::conflict). Inside the process each stream name maps to one of
// kStripes mutexes, held across read - decide - write (and its fsync), so
// every call on one stream is atomic; calls on streams of different stripes
// run at once and share fsyncs (the slotstore commits concurrent writes as
// a group). get and list also take the locks, so they never return a value
// that is not durable yet.
//
// Sized by use: a new file holds kInitialCatalogCapacity streams (a WAL to
// match: ~0.25 MiB in all) and grows fourfold whenever a create finds it
// full, up to catalog.capacity streams — a crash-atomic rewrite
// (SlotStore::migrate: a new file built beside, synced, renamed over the
// old), run while every other call waits. An existing file starts from its
// own size. Creating one more stream than catalog.capacity is
// Errc::store_full naming the file and the setting.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>

#include "catalog/catalog.h"
#include "catalog/catalog_limits.h"
#include "catalog/entry_rules.h"
#include "common/fs.h"
#include "slotstore/slotstore.h"

namespace strata::catalog {

inline constexpr const char* kCatalogFile = "catalog.slots";
// Streams a new catalog file holds. Capacity costs whether used or not:
// every byte of the file is written when it is created (two record copies
// of ~800 bytes per slot, plus the WAL) and the slotstore keeps each slot's
// state in memory (~0.8 KiB). 16 384 streams: a 41 MiB file (16 MiB of it
// WAL) and ~15 MiB of memory; 65 536 would take 117 MiB and ~54 MiB.
inline constexpr uint32_t kDefaultCatalogCapacity = 16384;
// Streams a new file holds before its first growth.
inline constexpr uint32_t kInitialCatalogCapacity = 64;
// Each growth multiplies the capacity by this.
inline constexpr uint32_t kCatalogGrowthFactor = 4;

struct EmbeddedCatalogOptions {
  // catalog.capacity: the most streams the file grows to, 1..2^24 - 1.
  uint32_t capacity = kDefaultCatalogCapacity;
  // What a new file holds before it first grows (at most `capacity`).
  uint32_t initial_capacity = kInitialCatalogCapacity;
  // The WAL (both halves of the slotstore's together) at `capacity`; a
  // smaller file gets a proportionally smaller one (wal_bytes_for).
  uint64_t wal_bytes = 16u << 20;
  bool create_if_missing = true;
  // Open for inspection (the CLI): no lock, no writes, no recovery written
  // back; create/put/bump_epoch/remove return invalid_argument.
  bool read_only = false;
  // Compaction of the slotstore on its own thread (false: inline; tests).
  bool background_compaction = true;
};

// What `strata catalog ls` shows besides the entries.
struct EmbeddedCatalogInfo {
  std::string path;
  uint32_t capacity = 0;  // streams the file holds
  uint32_t streams = 0;   // streams in it now
  uint64_t revision_floor = 0;
  uint64_t file_bytes = 0;
  uint64_t wal_bytes = 0;
  uint64_t wal_bytes_used = 0;
  uint64_t compactions = 0;  // of the slotstore's WAL since open
  bool fail_stopped = false;
  std::string fail_stop_reason;
};

class EmbeddedCatalog final : public Catalog {
 public:
  // Opens (creating it if missing and allowed) <dir>/catalog.slots; creates
  // `dir` too unless read_only. Errors: not_found (no file and
  // !create_if_missing or read_only), conflict (another writer holds it),
  // schema_mismatch (not a catalog file), invalid_argument (a capacity out of
  // range, naming catalog.capacity), and the slotstore's open errors.
  static Result<std::unique_ptr<EmbeddedCatalog>> open(FileSystem& fs, const std::string& dir,
                                                       const EmbeddedCatalogOptions& options = {});
  // The slotstore schema of a catalog file.
  static slotstore::Schema schema();

  ~EmbeddedCatalog() override;
  EmbeddedCatalog(const EmbeddedCatalog&) = delete;
  EmbeddedCatalog& operator=(const EmbeddedCatalog&) = delete;

  Result<StreamEntry> create(std::string_view stream, uint64_t epoch) override;
  Result<StreamEntry> get(std::string_view stream) override;
  Result<std::vector<StreamEntry>> list() override;
  Result<PutResult> put(std::string_view stream, std::string_view root_key, uint64_t epoch,
                        uint64_t expected_revision) override;
  Result<PutResult> bump_epoch(std::string_view stream, uint64_t expected_revision,
                               uint64_t min_epoch) override;
  Result<PutResult> remove(std::string_view stream, uint64_t expected_revision) override;
  std::string describe() const override { return "embedded:" + path_; }

  EmbeddedCatalogInfo info() const;
  // Times the file grew since it was opened.
  uint64_t growths() const;
  // Waits for compaction and closes the file; later calls return
  // Errc::closed. Idempotent. The destructor closes too (logging errors).
  Status close();

 private:
  static constexpr size_t kStripes = kEmbeddedStripes;

  EmbeddedCatalog(FileSystem& fs, std::string path, const EmbeddedCatalogOptions& options,
                  slotstore::Options store_options, std::unique_ptr<slotstore::SlotStore> store);
  // The create that found the file full at `full_capacity` streams: the
  // file is rewritten `kCatalogGrowthFactor` times larger (up to
  // options_.capacity), unless another call grew it meanwhile. store_full
  // when it is at catalog.capacity already.
  Status grow(uint32_t full_capacity, std::string_view stream);
  uint32_t capacity_locked() const;
  // The revision floor now (entry_rules.h), read under floor_mu_.
  uint64_t current_floor() const;

  std::mutex& stripe(std::string_view stream);
  Status check_writable(std::string_view what, std::string_view stream) const;
  // The stored entry (nullopt if absent); corrupt if a record lacks a field.
  Result<std::optional<StreamEntry>> read(std::string_view stream) const;
  Result<StreamEntry> decode(std::string_view stream, const slotstore::Record& rec) const;
  Status store_entry(const StreamEntry& e);
  Status erase_entry(const StreamEntry& removed);
  Status write(const Decision& d);
  // The slotstore's error with the file named, store_full explained.
  Error wrap(Error e, std::string_view what, std::string_view stream) const;

  FileSystem& fs_;
  const std::string path_;
  const bool read_only_;
  const EmbeddedCatalogOptions options_;
  slotstore::Options store_options_;  // reopening after a growth
  // Every call holds it shared while it uses store_; a growth exclusively,
  // while it replaces the file and store_. Taken before a stripe.
  mutable std::shared_mutex grow_mu_;
  std::unique_ptr<slotstore::SlotStore> store_;
  uint64_t growths_ = 0;  // guarded by grow_mu_
  std::array<std::mutex, kStripes> stripes_;
  // Guards revision_floor_ and orders the writes of it (remove holds it
  // across its write, so the stored floor only grows).
  mutable std::mutex floor_mu_;
  uint64_t revision_floor_ = 0;
  bool floor_stored_ = false;  // the floor record exists (always, unless read-only on a new file)
};

}  // namespace strata::catalog
