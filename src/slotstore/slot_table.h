// The in-memory image of a slot store: per slot its generation, key and
// fields area (the same fixed encoding as a record copy on disk, so memory is
// about slots x record size), the key -> slot index, the free-slot list and
// the interned-string table. Not thread-safe; SlotStore guards it.
//
// The key index is an open-addressing hash table of slot numbers (4 bytes a
// bucket, at most half full, sized once from the capacity); keys are
// compared in place in the slot array, so no key is stored twice.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "slotstore/format.h"

namespace strata::slotstore {

// Interned strings by id. Ids are dense from 0; an id lost in a crash
// before it was durable becomes a hole that is handed out again.
class StringTable {
 public:
  explicit StringTable(uint32_t capacity) : capacity_(capacity) {}

  // nullptr if `id` holds no string.
  const std::string* get(uint32_t id) const {
    return id < present_.size() && present_[id] ? &by_id_[id] : nullptr;
  }
  std::optional<uint32_t> find(std::string_view s) const;
  // Records `s` under `id`; false if `id` already holds a different string.
  bool add(uint32_t id, std::string s);
  // The id a new string gets next, or nullopt if the table is full.
  std::optional<uint32_t> next_free() const;
  // How many new strings still fit.
  uint32_t available() const { return uint32_t(holes_.size()) + (capacity_ - high_); }
  uint32_t used() const { return uint32_t(ids_.size()); }
  uint32_t capacity() const { return capacity_; }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  uint32_t capacity_;
  std::vector<std::string> by_id_;
  std::vector<uint8_t> present_;
  std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> ids_;
  std::vector<uint32_t> holes_;  // ids below high_ that hold nothing
  uint32_t high_ = 0;            // every id >= high_ is unused
};

class SlotTable {
 public:
  explicit SlotTable(const format::Layout& layout);

  bool live(uint32_t s) const { return key_len_[s] != 0; }
  uint32_t gen(uint32_t s) const { return gen_[s]; }
  std::string_view key(uint32_t s) const {
    return std::string_view(&keys_[size_t(s) * layout_.max_key], key_len_[s]);
  }
  char* fields(uint32_t s) { return &fields_[size_t(s) * layout_.fields_size]; }
  const char* fields(uint32_t s) const { return &fields_[size_t(s) * layout_.fields_size]; }
  std::optional<uint32_t> find(std::string_view key) const;

  // ---- recovery: no index maintenance until build_index() ----
  void load(uint32_t s, const format::RecordImage& rec);
  void assign_raw(uint32_t s, uint32_t gen, std::string_view key);
  void release_raw(uint32_t s);
  // Builds the key index and the free list (lowest slot handed out first);
  // corrupt if two live slots hold the same key. A free slot whose
  // generation reached format::kMaxGeneration is retired: it can never be
  // assigned again, so it is on no free list (capacity shrinks by one).
  Status build_index(const std::string& path);

  // ---- normal operation ----
  // Takes a free slot (the caller checked free_count() > 0).
  uint32_t pop_free();
  // Assigns the free slot `s` to `key` with generation `gen`; all fields absent.
  void assign(uint32_t s, uint32_t gen, std::string_view key);
  // Frees slot `s` (its generation stays; the next assign bumps it, or it
  // is retired, see build_index).
  void release(uint32_t s);
  uint32_t free_count() const { return uint32_t(free_.size()); }
  uint32_t used() const { return indexed_; }

  // Decodes the fields of slot `s`; corrupt if it names a missing string.
  Result<Record> to_record(uint32_t s) const;

  StringTable strings;

 private:
  // Linear probing with backward-shift deletion (no tombstones).
  size_t bucket_of(std::string_view key) const;
  void index_insert(uint32_t s);
  void index_erase(uint32_t s);

  const format::Layout& layout_;
  std::vector<uint32_t> gen_;
  std::vector<uint8_t> key_len_;  // 0 = free
  std::vector<char> keys_;        // slots x max_key
  std::vector<char> fields_;      // slots x fields_size
  std::vector<uint32_t> index_;   // slot + 1 per bucket, 0 = empty; size a power of two
  uint32_t indexed_ = 0;
  std::vector<uint32_t> free_;  // stack; back() is handed out next
};

}  // namespace strata::slotstore
