// Shared helpers for the slotstore tests: the schemas of its two users, a
// model of the expected contents, and assertion helpers.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "common/fault_fs.h"
#include "slotstore/format.h"
#include "slotstore/slotstore.h"
#include "support/assertions.h"

namespace strata::slotstore::test {

// raftmeta's schema: term and vote are low frequency, last_applied high.
enum RaftField : FieldId { kTerm = 0, kVote = 1, kApplied = 2 };
inline Schema raft_schema() {
  Schema s;
  s.max_key_len = 64;
  s.fields = {
      {"current_term", FieldType::u64(), Frequency::low},
      {"voted_for", FieldType::tuple_of({FieldType::interned(64), FieldType::interned(64)}),
       Frequency::low},
      {"last_applied", FieldType::u64(), Frequency::high},
  };
  return s;
}

// The remote tier catalog's schema: all low frequency.
inline Schema catalog_schema() {
  Schema s;
  s.max_key_len = 255;
  s.fields = {
      {"epoch", FieldType::u64(), Frequency::low},
      {"revision", FieldType::u64(), Frequency::low},
      {"root", FieldType::bytes(200), Frequency::low},
  };
  return s;
}

inline Value vote(const std::string& name, const std::string& node) {
  return Value::tuple({Scalar(name), Scalar(node)});
}

inline Options small_options(uint32_t slots = 64, uint32_t strings = 32,
                             uint64_t wal_bytes = 16 * 1024) {
  Options o;
  o.slots = slots;
  o.strings = strings;
  o.wal_bytes = wal_bytes;
  return o;
}

inline std::unique_ptr<SlotStore> must_open(FileSystem& fs, const std::string& path,
                                            const Schema& schema, const Options& o) {
  auto r = SlotStore::open(fs, path, schema, o);
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  return r.ok() ? std::move(r).value() : nullptr;
}

// Small options with compaction on the writer's thread (deterministic).
inline Options inline_options(uint32_t slots = 16, uint32_t strings = 16, uint64_t wal = 8192) {
  Options o = small_options(slots, strings, wal);
  o.background_compaction = false;
  return o;
}

// Overwrites bytes of a file in `fs`, durably (damage for corruption tests).
inline Status patch(FileSystem& fs, const std::string& path, uint64_t off, BytesView bytes) {
  STRATA_ASSIGN_OR_RETURN(auto f, fs.open(path, OpenOptions::read_write()));
  STRATA_TRY(f->write_at(off, bytes));
  return f->sync();
}

// The layout a store file's header describes.
inline format::Layout layout_of(FileSystem& fs, const std::string& path) {
  auto bytes = read_file(fs, path);
  EXPECT_TRUE(bytes.ok());
  uint64_t need = 0;
  auto l = format::decode_header(*bytes, path, &need);
  EXPECT_TRUE(l.ok()) << l.error().to_string();
  return *l;
}

// Expected contents: key -> record.
using Contents = std::map<Bytes, Record>;

inline Contents contents_of(const SlotStore& s) {
  Contents c;
  auto all = s.read_all();
  EXPECT_TRUE(all.ok()) << all.error().to_string();
  if (!all.ok()) return c;
  for (auto& [k, r] : *all) c[k] = r;
  return c;
}

inline std::string describe(const Contents& c) {
  std::string s;
  for (const auto& [k, r] : c) s += "  " + k + " = " + r.to_string() + "\n";
  return s;
}

// Applies one op of a batch to a model (the op was validated by the store).
inline void apply_to(Contents& c, const WriteBatch::Op& op, size_t nfields) {
  if (op.erase) {
    c.erase(op.key);
    return;
  }
  auto it = c.find(op.key);
  if (it == c.end()) {
    Record r;
    r.fields.resize(nfields);
    it = c.emplace(op.key, r).first;
  }
  for (const FieldUpdate& u : op.updates) it->second.fields[u.field] = u.value;
}

}  // namespace strata::slotstore::test
