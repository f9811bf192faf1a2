#include "raftmeta/inspect.h"

#include <fmt/format.h>

#include "raftmeta/store_options.h"

namespace strata::raftmeta {

Result<InspectReport> inspect(FileSystem& fs, const std::string& dir) {
  InspectReport r;
  r.dir = dir;
  r.store = store_path(dir);
  r.dets_present = exists(fs, dets_path(dir));
  r.dets_retired = exists(fs, dets_path(dir) + kRetiredSuffix);
  r.migrating_leftover = exists(fs, migrating_path(dir));
  if (!exists(fs, r.store)) {
    std::string hint = r.dets_present ? fmt::format(
                                            "; {} is there, not migrated yet (strata "
                                            "raftmeta migrate, or open the store)",
                                            dets_path(dir))
                                      : "";
    return Error(Errc::not_found, fmt::format("{}: no raftmeta store{}", r.store, hint));
  }
  slotstore::Options so;
  so.read_only = true;
  so.create_if_missing = false;
  STRATA_ASSIGN_OR_RETURN(auto store, slotstore::SlotStore::open_existing(fs, r.store, so));
  STRATA_ASSIGN_OR_RETURN(r.bounds, bounds_of(store->schema(), r.store));
  r.info = store->info();
  Status bad;
  STRATA_TRY(store->fold([&](BytesView id, const slotstore::Record& rec) {
    auto m = decode_record(rec, id, r.store);
    if (!m.ok()) {
      bad = std::move(m).error();
      return false;
    }
    r.servers.emplace_back(Bytes(id), std::move(m).value());
    return true;
  }));
  STRATA_TRY(std::move(bad));
  return r;
}

}  // namespace strata::raftmeta
