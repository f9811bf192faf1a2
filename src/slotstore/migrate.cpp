// SlotStore::migrate: copy a store into a new schema/capacity, crash-atomically.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/publish_file.h"
#include "slotstore/slotstore.h"
#include "slotstore/store_impl.h"

namespace strata::slotstore {

namespace {

constexpr size_t kBatchKeys = 1024;

// Same shape, bounds aside: the values of `from` can be copied into `to`
// element by element (a value longer than a new bound fails at write time,
// naming the key).
bool compatible(const FieldType& from, const FieldType& to) {
  if (from.tuple != to.tuple || from.elements.size() != to.elements.size()) return false;
  for (size_t i = 0; i < from.elements.size(); ++i) {
    if (from.elements[i].kind != to.elements[i].kind) return false;
  }
  return true;
}

}  // namespace

Status SlotStore::migrate(FileSystem& fs, const std::string& path, const Schema& to,
                          const Options& to_options) {
  auto ctx = [&](Error e) { return std::move(e).with_context("migrate " + path); };
  if (Status s = to.validate(); !s.ok()) return ctx(s.error());
  // No writer may change the source while it is copied and replaced.
  FileLock lock;
  if (&fs == &posix_fs()) {
    auto l = lock_store_file(path);
    if (!l.ok()) return ctx(std::move(l).error());
    lock = std::move(l).value();
  }
  // The source is only read: a failed migration leaves it byte for byte.
  Options src_opt;
  src_opt.read_only = true;
  src_opt.create_if_missing = false;
  auto src = open_existing(fs, path, src_opt);
  if (!src.ok()) return ctx(std::move(src).error());
  const Schema& from = (*src)->schema();
  std::vector<std::optional<FieldId>> source_of(to.fields.size());
  for (size_t j = 0; j < to.fields.size(); ++j) {
    auto id = from.field_id(to.fields[j].name);
    if (!id.ok()) continue;  // a new field: starts absent
    if (!compatible(from.fields[*id].type, to.fields[j].type)) {
      return ctx(
          Error(Errc::invalid_argument,
                fmt::format("field '{}' changes shape from {} to {}", to.fields[j].name,
                            from.fields[*id].type.to_string(), to.fields[j].type.to_string())));
    }
    source_of[j] = *id;
  }

  const std::string tmp = path + ".migrating";
  auto cleanup = [&] {
    for (const std::string& p : {tmp, tmp + ".creating"}) {
      Status s = fs.remove(p);
      if (!s.ok() && s.code() != Errc::not_found) {
        spdlog::warn("migrate {}: could not remove {}: {}", path, p, s.to_string());
      }
    }
  };
  cleanup();  // a leftover of a migration that crashed
  Options dst_opt = to_options;
  dst_opt.create_if_missing = true;
  dst_opt.error_if_exists = true;
  dst_opt.read_only = false;
  dst_opt.lock = false;
  dst_opt.background_compaction = false;
  auto dst = open(fs, tmp, to, dst_opt);
  if (!dst.ok()) {
    cleanup();
    return ctx(std::move(dst).error());
  }
  WriteBatch batch;
  Status copy;
  Status folded = (*src)->fold([&](BytesView key, const Record& r) {
    std::vector<FieldUpdate> ups;
    for (size_t j = 0; j < source_of.size(); ++j) {
      if (source_of[j] && r[*source_of[j]]) ups.push_back(set(FieldId(j), *r[*source_of[j]]));
    }
    batch.put(key, std::move(ups));
    if (batch.size() >= kBatchKeys) {
      copy = (*dst)->write_batch(batch);
      batch.clear();
    }
    return copy.ok();
  });
  if (folded.ok() && copy.ok() && !batch.empty()) copy = (*dst)->write_batch(batch);
  if (folded.ok() && copy.ok()) copy = (*dst)->sync();
  if (folded.ok() && copy.ok()) copy = (*dst)->close();
  dst->reset();
  (void)(*src)->close();
  src->reset();
  if (!folded.ok() || !copy.ok()) {
    cleanup();
    return ctx(!folded.ok() ? folded.error() : copy.error());
  }
  // The new file is complete and durable; the rename is the commit point.
  if (Status s = rename_durable(fs, tmp, path); !s.ok()) {
    cleanup();  // finds nothing to remove if only the directory fsync failed
    return ctx(s.error());
  }
  return Status::OK();
}

}  // namespace strata::slotstore
