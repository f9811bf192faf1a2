#include "slotstore/slot_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "common/assert.h"
#include "common/endian.h"

namespace strata::slotstore {

std::optional<uint32_t> StringTable::find(std::string_view s) const {
  auto it = ids_.find(s);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

bool StringTable::add(uint32_t id, std::string s) {
  STRATA_ASSERT(id < capacity_, "string id beyond the table capacity");
  if (const std::string* have = get(id)) return *have == s;
  if (id >= by_id_.size()) {
    by_id_.resize(id + 1);
    present_.resize(id + 1, 0);
  }
  if (id >= high_) {
    for (uint32_t h = high_; h < id; ++h) holes_.push_back(h);
    high_ = id + 1;
  } else {
    auto it = std::find(holes_.begin(), holes_.end(), id);
    STRATA_ASSERT(it != holes_.end(), "string id below high mark is neither present nor a hole");
    holes_.erase(it);
  }
  present_[id] = 1;
  by_id_[id] = s;
  // Not expected: the same bytes under a second id. Lookups keep the first
  // id; both ids decode to the same bytes, so no value changes.
  ids_.emplace(std::move(s), id);
  return true;
}

std::optional<uint32_t> StringTable::next_free() const {
  if (!holes_.empty()) return holes_.back();
  if (high_ < capacity_) return high_;
  return std::nullopt;
}

SlotTable::SlotTable(const format::Layout& layout)
    : strings(layout.strings),
      layout_(layout),
      gen_(layout.slots, 0),
      key_len_(layout.slots, 0),
      keys_(size_t(layout.slots) * layout.max_key, '\0'),
      fields_(size_t(layout.slots) * layout.fields_size, '\0') {
  size_t buckets = 4;
  while (buckets < size_t(layout.slots) * 2) buckets *= 2;
  index_.assign(buckets, 0);
}

size_t SlotTable::bucket_of(std::string_view key) const {
  return std::hash<std::string_view>()(key) & (index_.size() - 1);
}

std::optional<uint32_t> SlotTable::find(std::string_view key) const {
  const size_t mask = index_.size() - 1;
  for (size_t b = bucket_of(key);; b = (b + 1) & mask) {
    uint32_t e = index_[b];
    if (e == 0) return std::nullopt;
    if (this->key(e - 1) == key) return e - 1;
  }
}

void SlotTable::index_insert(uint32_t s) {
  const size_t mask = index_.size() - 1;
  size_t b = bucket_of(key(s));
  while (index_[b] != 0) b = (b + 1) & mask;
  index_[b] = s + 1;
  ++indexed_;
}

void SlotTable::index_erase(uint32_t s) {
  const size_t mask = index_.size() - 1;
  size_t b = bucket_of(key(s));
  while (index_[b] != s + 1) {
    STRATA_ASSERT(index_[b] != 0, "erasing a key that is not indexed");
    b = (b + 1) & mask;
  }
  // Backward shift: pull later entries of the probe run into the hole so
  // every remaining key stays reachable from its home bucket.
  size_t hole = b;
  for (size_t j = (hole + 1) & mask; index_[j] != 0; j = (j + 1) & mask) {
    size_t home = bucket_of(key(index_[j] - 1));
    bool movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
    if (movable) {
      index_[hole] = index_[j];
      hole = j;
    }
  }
  index_[hole] = 0;
  --indexed_;
}

void SlotTable::load(uint32_t s, const format::RecordImage& rec) {
  gen_[s] = rec.gen;
  if (rec.live) {
    assign_raw(s, rec.gen, rec.key);
    std::memcpy(fields(s), rec.fields.data(), layout_.fields_size);
  } else {
    release_raw(s);
  }
}

void SlotTable::assign_raw(uint32_t s, uint32_t gen, std::string_view key) {
  STRATA_ASSERT(!key.empty() && key.size() <= layout_.max_key, "bad key length for a slot");
  gen_[s] = gen;
  key_len_[s] = uint8_t(key.size());
  std::memcpy(&keys_[size_t(s) * layout_.max_key], key.data(), key.size());
  std::memset(fields(s), 0, layout_.fields_size);
}

void SlotTable::release_raw(uint32_t s) {
  key_len_[s] = 0;
  std::memset(&keys_[size_t(s) * layout_.max_key], 0, layout_.max_key);
  std::memset(fields(s), 0, layout_.fields_size);
}

Status SlotTable::build_index(const std::string& path) {
  std::fill(index_.begin(), index_.end(), 0);
  indexed_ = 0;
  free_.clear();
  for (uint32_t s = layout_.slots; s-- > 0;) {
    if (!live(s)) {
      if (gen_[s] < format::kMaxGeneration) free_.push_back(s);
      continue;
    }
    if (std::optional<uint32_t> other = find(key(s))) {
      return Error(Errc::corrupt, fmt::format("{}: key {} is live in slots {} and {}", path,
                                              format::describe_key(key(s)), *other, s));
    }
    index_insert(s);
  }
  return Status::OK();
}

uint32_t SlotTable::pop_free() {
  STRATA_ASSERT(!free_.empty(), "pop_free on a full slot table");
  uint32_t s = free_.back();
  free_.pop_back();
  return s;
}

void SlotTable::assign(uint32_t s, uint32_t gen, std::string_view key) {
  STRATA_ASSERT(!live(s), "assign of a live slot");
  assign_raw(s, gen, key);
  index_insert(s);
}

void SlotTable::release(uint32_t s) {
  STRATA_ASSERT(live(s), "release of a free slot");
  index_erase(s);
  release_raw(s);
  if (gen_[s] < format::kMaxGeneration) free_.push_back(s);
}

Result<Record> SlotTable::to_record(uint32_t s) const {
  Record rec;
  rec.fields.resize(layout_.fields.size());
  const char* base = fields(s);
  for (size_t f = 0; f < layout_.fields.size(); ++f) {
    const format::FieldLayout& fl = layout_.fields[f];
    const char* p = base + fl.offset;
    if (!p[0]) continue;
    std::vector<Scalar> elems;
    elems.reserve(fl.elements.size());
    for (size_t e = 0; e < fl.elements.size(); ++e) {
      const uint8_t* q = reinterpret_cast<const uint8_t*>(p + fl.element_offset[e]);
      switch (fl.elements[e].kind) {
        case ElementKind::u64:
          elems.emplace_back(get_be64(q));
          break;
        case ElementKind::bytes:
          elems.emplace_back(std::string(reinterpret_cast<const char*>(q) + 2, get_be16(q)));
          break;
        case ElementKind::interned: {
          uint32_t id = get_be32(q);
          const std::string* str = strings.get(id);
          if (!str) {
            return Error(Errc::corrupt, fmt::format("slot {} field '{}' refers to missing interned "
                                                    "string {}",
                                                    s, layout_.schema.fields[f].name, id));
          }
          elems.emplace_back(*str);
          break;
        }
      }
    }
    if (layout_.schema.fields[f].type.tuple) {
      rec.fields[f] = Value::tuple(std::move(elems));
    } else if (elems[0].index() == 0) {
      rec.fields[f] = Value::u64(std::get<0>(elems[0]));
    } else {
      rec.fields[f] = Value::str(std::move(std::get<1>(elems[0])));
    }
  }
  return rec;
}

}  // namespace strata::slotstore
