#include "slotstore/format.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "common/assert.h"
#include "common/crc32c.h"
#include "common/endian.h"

namespace strata::slotstore::format {

namespace {

uint64_t align_up(uint64_t v) {
  return (v + kAlign - 1) / kAlign * kAlign;
}

uint8_t* p8(char* p) {
  return reinterpret_cast<uint8_t*>(p);
}
const uint8_t* p8(const char* p) {
  return reinterpret_cast<const uint8_t*>(p);
}

// CRC of a record copy: its position (slot, copy) and bytes [4, record_size).
// Mixing in the position catches a copy written to the wrong place.
uint32_t record_crc(const Layout& l, uint32_t slot, int copy, const char* rec) {
  uint8_t pos[5];
  put_be32(pos, slot);
  pos[4] = uint8_t(copy);
  uint32_t c = crc32c::extend(0, pos, sizeof pos);
  return crc32c::extend(c, rec + 4, l.record_size - 4);
}

uint32_t string_crc(uint32_t id, const char* entry, size_t len) {
  uint8_t idb[4];
  put_be32(idb, id);
  uint32_t c = crc32c::extend(0, idb, 4);
  return crc32c::extend(c, entry + 4, kStringHeaderSize - 4 + len);
}

uint32_t half_crc(int half, const char* h) {
  uint8_t hb = uint8_t(half);
  uint32_t c = crc32c::extend(0, &hb, 1);
  return crc32c::extend(c, h + 4, kHalfHeaderSize - 4);
}

// The framing every WAL entry passes before its body is looked at: a size
// that fits in `in`, and a chain value that continues `prev_chain`.
enum class Frame { ok, short_header, bad_size, chain_mismatch };
Frame check_frame(BytesView in, uint32_t prev_chain, uint32_t* size, uint32_t* chain) {
  if (in.size() < kEntryHeaderSize) return Frame::short_header;
  const uint8_t* p = p8(in.data());
  *size = get_be32(p + 4);
  if (*size < kEntryHeaderSize || *size > in.size()) return Frame::bad_size;
  *chain = crc32c::extend(prev_chain, in.data() + 4, *size - 4);
  return *chain == get_be32(p) ? Frame::ok : Frame::chain_mismatch;
}

// Bytes [4, 9) of a `durable` entry: its size and type.
constexpr char kDurableSignature[5] = {0, 0, 0, char(kDurableEntrySize), char(EntryType::durable)};

// A `durable` entry's own check: CRC32C of its bytes [4, 25) (size, type,
// lsn, durable lsn), so it can be recognised without the chain before it.
uint32_t durable_check(uint64_t lsn, uint64_t durable_lsn) {
  uint8_t b[sizeof kDurableSignature + 16];
  std::memcpy(b, kDurableSignature, sizeof kDurableSignature);
  put_be64(b + 5, lsn);
  put_be64(b + 13, durable_lsn);
  return crc32c::value(b, sizeof b);
}

// Checks one field's fixed encoding; false if malformed.
bool field_well_formed(const FieldLayout& f, const char* p) {
  uint8_t present = uint8_t(p[0]);
  if (present > 1) return false;
  if (!present) {
    for (uint32_t i = 1; i < f.size; ++i) {
      if (p[i] != 0) return false;
    }
    return true;
  }
  for (size_t e = 0; e < f.elements.size(); ++e) {
    const char* q = p + f.element_offset[e];
    if (f.elements[e].kind == ElementKind::bytes) {
      if (get_be16(p8(q)) > f.elements[e].max_len) return false;
    }
  }
  return true;
}

}  // namespace

uint32_t fixed_element_size(const Element& e) {
  switch (e.kind) {
    case ElementKind::u64:
      return 8;
    case ElementKind::bytes:
      return 2 + e.max_len;
    case ElementKind::interned:
      return 4;
  }
  return 0;
}

uint32_t compact_element_size(const Element& e) {
  return fixed_element_size(e);
}

Result<Layout> make_layout(const Schema& schema, uint32_t slots, uint32_t strings,
                           uint64_t wal_bytes) {
  STRATA_TRY(schema.validate());
  if (slots < 1 || slots > kMaxSlots) {
    return Error(Errc::invalid_argument,
                 fmt::format("slotstore: slots must be 1..{}, got {}", kMaxSlots, slots));
  }
  if (strings > kMaxStrings) {
    return Error(Errc::invalid_argument,
                 fmt::format("slotstore: strings must be 0..{}, got {}", kMaxStrings, strings));
  }
  Layout l;
  l.schema = schema;
  l.slots = slots;
  l.strings = strings;
  l.max_key = schema.max_key_len;
  uint32_t off = 0;
  // Largest put: header, slot, gen, flags, key length, key, update count,
  // then per field its id, presence byte and elements.
  uint64_t put_max = kEntryHeaderSize + 4 + 4 + 1 + 1 + l.max_key + 1;
  uint64_t interns_max = 0;
  for (const FieldSpec& f : schema.fields) {
    FieldLayout fl;
    fl.offset = off;
    fl.elements = f.type.elements;
    uint32_t size = 1;
    put_max += 2;
    for (const Element& e : f.type.elements) {
      fl.element_offset.push_back(size);
      size += fixed_element_size(e);
      put_max += compact_element_size(e);
      if (e.kind == ElementKind::interned) {
        l.string_max_len = std::max<uint32_t>(l.string_max_len, e.max_len);
        interns_max += kEntryHeaderSize + 4 + 2 + e.max_len;
      }
    }
    fl.size = size;
    off += size;
    l.fields.push_back(std::move(fl));
  }
  l.fields_size = off;
  l.record_size = uint32_t(kRecordHeaderSize + l.max_key + l.fields_size);
  l.string_slot_size = uint32_t(kStringHeaderSize + l.string_max_len);
  l.max_op_bytes = uint32_t(put_max + interns_max);
  Bytes schema_bytes = schema.encode();
  l.header_size = align_up(72 + schema_bytes.size());
  l.strings_off = l.header_size;
  l.records_off = align_up(l.strings_off + uint64_t(strings) * l.string_slot_size);
  l.wal_off = align_up(l.records_off + uint64_t(slots) * 2 * l.record_size);
  l.half_size = wal_bytes / 2 / kAlign * kAlign;
  // A half must hold its header, an open marker and the largest put with
  // its interned strings, so that any batch can make progress one op at a
  // time (split batches never livelock).
  uint64_t min_half = align_up(kHalfHeaderSize + kEntryHeaderSize + 8 + l.max_op_bytes);
  if (l.half_size < min_half || l.half_size > (uint64_t(1) << 32)) {
    return Error(Errc::invalid_argument,
                 fmt::format("slotstore: wal_bytes {} gives WAL halves of {} bytes; this schema "
                             "needs halves of {}..{} bytes (wal_bytes >= {})",
                             wal_bytes, l.half_size, min_half, uint64_t(1) << 32, 2 * min_half));
  }
  l.file_size = l.wal_off + 2 * l.half_size;
  return l;
}

Bytes encode_header(const Layout& l) {
  Bytes schema = l.schema.encode();
  Bytes out;
  ByteWriter w(&out);
  w.be32(kMagic);
  w.be16(kVersion);
  w.be16(0);
  w.be32(uint32_t(72 + schema.size()));
  w.be32(l.slots);
  w.be32(l.strings);
  w.be32(l.record_size);
  w.be32(l.string_slot_size);
  w.be32(0);
  w.be64(l.strings_off);
  w.be64(l.records_off);
  w.be64(l.wal_off);
  w.be64(l.half_size);
  w.be32(uint32_t(schema.size()));
  w.bytes(schema);
  w.be32(crc32c::value(out));
  out.resize(l.header_size, '\0');
  return out;
}

Result<Layout> decode_header(BytesView in, const std::string& path, uint64_t* need_more) {
  *need_more = 0;
  if (in.size() < 72) {
    return Error(Errc::corrupt, fmt::format("{}: file too short for a slotstore header ({} bytes)",
                                            path, in.size()));
  }
  const uint8_t* p = p8(in.data());
  if (get_be32(p) != kMagic) {
    return Error(Errc::corrupt, fmt::format("{}: not a slotstore file (bad magic)", path));
  }
  uint16_t version = get_be16(p + 4);
  if (version != kVersion) {
    return Error(Errc::unsupported_version,
                 fmt::format("{}: slotstore format version {}; this build reads version {}", path,
                             version, kVersion));
  }
  uint32_t header_len = get_be32(p + 8);
  if (header_len < 72 || header_len > (1u << 20)) {
    return Error(Errc::corrupt, fmt::format("{}: header length {} out of range", path, header_len));
  }
  if (in.size() < header_len) {
    *need_more = header_len;
    return Error(Errc::corrupt, fmt::format("{}: header needs {} bytes", path, header_len));
  }
  uint32_t crc = get_be32(p + header_len - 4);
  if (crc32c::value(in.data(), header_len - 4) != crc) {
    return Error(Errc::corrupt, fmt::format("{}: header CRC mismatch", path));
  }
  uint32_t slots = get_be32(p + 12);
  uint32_t strings = get_be32(p + 16);
  uint32_t record_size = get_be32(p + 20);
  uint32_t string_slot_size = get_be32(p + 24);
  uint64_t strings_off = get_be64(p + 32);
  uint64_t records_off = get_be64(p + 40);
  uint64_t wal_off = get_be64(p + 48);
  uint64_t half_size = get_be64(p + 56);
  uint32_t schema_len = get_be32(p + 64);
  if (72 + uint64_t(schema_len) != header_len) {
    return Error(Errc::corrupt, fmt::format("{}: schema length {} does not match header length {}",
                                            path, schema_len, header_len));
  }
  auto schema = Schema::decode(in.substr(68, schema_len));
  if (!schema.ok()) return std::move(schema).error().with_context(path);
  auto l = make_layout(*schema, slots, strings, 2 * half_size);
  if (!l.ok()) {
    return Error(Errc::corrupt, fmt::format("{}: header describes an invalid layout: {}", path,
                                            l.error().message));
  }
  if (l->record_size != record_size || l->string_slot_size != string_slot_size ||
      l->strings_off != strings_off || l->records_off != records_off || l->wal_off != wal_off ||
      l->half_size != half_size) {
    return Error(
        Errc::corrupt,
        fmt::format("{}: header layout fields disagree with its schema and capacity", path));
  }
  return l;
}

void encode_record(const Layout& l, uint32_t slot, int copy, const RecordImage& rec, char* out) {
  STRATA_ASSERT(rec.key.size() <= l.max_key, "record key longer than max_key");
  STRATA_ASSERT(rec.fields.size() == l.fields_size, "record fields area has the wrong size");
  std::memset(out, 0, l.record_size);
  put_be64(p8(out + 4), rec.lsn);
  put_be32(p8(out + 12), rec.gen);
  out[16] = rec.live ? 1 : 0;
  out[17] = char(uint8_t(rec.key.size()));
  std::memcpy(out + kRecordHeaderSize, rec.key.data(), rec.key.size());
  std::memcpy(out + kRecordHeaderSize + l.max_key, rec.fields.data(), l.fields_size);
  put_be32(p8(out), record_crc(l, slot, copy, out));
}

bool decode_record(const Layout& l, uint32_t slot, int copy, const char* in, RecordImage* out) {
  if (get_be32(p8(in)) != record_crc(l, slot, copy, in)) return false;
  uint8_t state = uint8_t(in[16]);
  uint8_t key_len = uint8_t(in[17]);
  if (state > 1 || key_len > l.max_key) return false;
  if ((state == 1) != (key_len > 0)) return false;
  const char* fields = in + kRecordHeaderSize + l.max_key;
  for (const FieldLayout& f : l.fields) {
    if (!field_well_formed(f, fields + f.offset)) return false;
  }
  out->lsn = get_be64(p8(in + 4));
  out->gen = get_be32(p8(in + 12));
  out->live = state == 1;
  out->key.assign(in + kRecordHeaderSize, key_len);
  out->fields.assign(fields, l.fields_size);
  return true;
}

int pick_current(bool valid0, uint64_t lsn0, bool valid1, uint64_t lsn1) {
  if (valid0 && valid1) return lsn1 > lsn0 ? 1 : 0;
  if (valid0) return 0;
  if (valid1) return 1;
  return -1;
}

void encode_string(const Layout& l, uint32_t id, BytesView s, char* out) {
  STRATA_ASSERT(s.size() <= l.string_max_len, "interned string longer than the table slot");
  std::memset(out, 0, l.string_slot_size);
  out[4] = char(kStringUsed);
  put_be16(p8(out + 5), uint16_t(s.size()));
  std::memcpy(out + kStringHeaderSize, s.data(), s.size());
  put_be32(p8(out), string_crc(id, out, s.size()));
}

StringSlot decode_string(const Layout& l, uint32_t id, const char* in, Bytes* out) {
  bool all_zero = true;
  for (uint32_t i = 0; i < l.string_slot_size && all_zero; ++i) all_zero = in[i] == 0;
  if (all_zero) return StringSlot::empty;
  uint16_t len = get_be16(p8(in + 5));
  if (uint8_t(in[4]) != kStringUsed || len > l.string_max_len) return StringSlot::damaged;
  if (get_be32(p8(in)) != string_crc(id, in, len)) return StringSlot::damaged;
  out->assign(in + kStringHeaderSize, len);
  return StringSlot::valid;
}

void encode_half_header(int half, const HalfHeader& h, char* out) {
  std::memset(out, 0, kHalfHeaderSize);
  put_be32(p8(out + 4), kHalfMagic);
  put_be64(p8(out + 8), h.seq);
  put_be64(p8(out + 16), h.first_lsn);
  put_be32(p8(out + 24), h.chain_seed);
  put_be32(p8(out), half_crc(half, out));
}

bool decode_half_header(int half, const char* in, HalfHeader* out) {
  if (get_be32(p8(in + 4)) != kHalfMagic) return false;
  if (get_be32(p8(in)) != half_crc(half, in)) return false;
  out->seq = get_be64(p8(in + 8));
  out->first_lsn = get_be64(p8(in + 16));
  out->chain_seed = get_be32(p8(in + 24));
  return out->seq > 0;
}

uint32_t append_entry(Bytes* out, EntryType type, uint64_t lsn, BytesView body,
                      uint32_t prev_chain) {
  size_t start = out->size();
  uint32_t size = uint32_t(kEntryHeaderSize + body.size());
  out->resize(start + size);
  char* p = out->data() + start;
  put_be32(p8(p + 4), size);
  p[8] = char(type);
  put_be64(p8(p + 9), lsn);
  std::memcpy(p + kEntryHeaderSize, body.data(), body.size());
  uint32_t chain = crc32c::extend(prev_chain, p + 4, size - 4);
  put_be32(p8(p), chain);
  return chain;
}

Result<EntryStatus> decode_entry(const Layout& l, BytesView in, uint32_t prev_chain, Entry* out) {
  uint32_t size = 0, chain = 0;
  if (check_frame(in, prev_chain, &size, &chain) != Frame::ok) return EntryStatus::end;
  const uint8_t* p = p8(in.data());
  // From here the bytes are a genuine continuation of the chain: a body
  // that does not parse is a bug or deliberate damage, not a torn write.
  Entry e;
  e.chain = chain;
  e.size = size;
  e.type = EntryType(p[8]);
  e.lsn = get_be64(p + 9);
  // A context name short enough for std::string's inline buffer: replay and
  // compaction decode every entry, and a heap allocation each showed up.
  ByteReader r(in.substr(kEntryHeaderSize, size - kEntryHeaderSize), "WAL entry");
  auto bad = [&](const std::string& why) {
    return Error(Errc::corrupt, fmt::format("WAL entry lsn {}: {}", e.lsn, why));
  };
  // A generation above kMaxGeneration is never written (store_write.cpp).
  auto check_gen = [&]() -> Status {
    if (r.failed() || e.gen <= kMaxGeneration) return Status::OK();
    return bad(fmt::format("slot {} generation {} is above the largest a writer assigns ({})",
                           e.slot, e.gen, kMaxGeneration));
  };
  switch (e.type) {
    case EntryType::marker:
      r.be64(&e.nonce, "nonce");
      break;
    case EntryType::durable: {
      uint32_t check = 0;
      r.be64(&e.durable_lsn, "durable lsn");
      r.be32(&check, "check");
      if (r.failed()) break;
      if (check != durable_check(e.lsn, e.durable_lsn)) return bad("durable entry check mismatch");
      if (e.durable_lsn >= e.lsn) {
        return bad(fmt::format("durable entry claims lsn {}, not below its own", e.durable_lsn));
      }
      break;
    }
    case EntryType::put: {
      uint8_t flags = 0;
      r.be32(&e.slot, "slot");
      r.be32(&e.gen, "generation");
      r.u8(&flags, "flags");
      e.assign = (flags & kPutAssign) != 0;
      if (e.assign) {
        uint8_t key_len = 0;
        r.u8(&key_len, "key length");
        r.bytes(key_len, &e.key, "key");
        if (!r.failed() && (key_len == 0 || key_len > l.max_key)) return bad("bad key length");
      }
      r.u8(&e.n_updates, "update count");
      if (r.failed()) return r.error();
      e.updates = in.substr(kEntryHeaderSize + r.position(), r.remaining());
      r.skip(r.remaining(), "updates");
      if (e.slot >= l.slots) return bad(fmt::format("slot {} >= {} slots", e.slot, l.slots));
      STRATA_TRY(check_gen());
      break;
    }
    case EntryType::erase:
      r.be32(&e.slot, "slot");
      r.be32(&e.gen, "generation");
      if (!r.failed() && e.slot >= l.slots) {
        return bad(fmt::format("slot {} >= {} slots", e.slot, l.slots));
      }
      STRATA_TRY(check_gen());
      break;
    case EntryType::intern: {
      uint16_t len = 0;
      r.be32(&e.string_id, "string id");
      r.be16(&len, "string length");
      r.bytes(len, &e.str, "string");
      if (!r.failed() && (e.string_id >= l.strings || len > l.string_max_len)) {
        return bad(fmt::format("string id {} or length {} out of range", e.string_id, len));
      }
      break;
    }
    default:
      return bad(fmt::format("unknown entry type {}", int(p[8])));
  }
  if (r.failed()) return r.error();
  if (r.remaining() != 0) return bad(fmt::format("{} trailing bytes", r.remaining()));
  *out = e;
  return EntryStatus::ok;
}

std::optional<std::string> why_chain_ends(BytesView in, uint32_t prev_chain) {
  uint32_t size = 0, chain = 0;
  switch (check_frame(in, prev_chain, &size, &chain)) {
    case Frame::short_header:
      if (in.empty()) return "the half ends here";
      return fmt::format("{} bytes before the end of the half, too few for an entry", in.size());
    case Frame::bad_size: {
      BytesView head = in.substr(0, kEntryHeaderSize);
      if (std::all_of(head.begin(), head.end(), [](char c) { return c == 0; })) {
        return "zero bytes, where the next entry would start";
      }
      return fmt::format("entry size {} is out of range ({} bytes left in the half)", size,
                         in.size());
    }
    case Frame::chain_mismatch:
      return fmt::format(
          "the entry of {} bytes here does not continue the hash chain (torn, "
          "damaged or stale bytes)",
          size);
    case Frame::ok:
      break;
  }
  return std::nullopt;
}

Bytes durable_body(uint64_t lsn, uint64_t durable_lsn) {
  Bytes body;
  ByteWriter w(&body);
  w.be64(durable_lsn);
  w.be32(durable_check(lsn, durable_lsn));
  return body;
}

bool decode_durable_claim(BytesView in, DurableClaim* out) {
  if (in.size() < kDurableEntrySize) return false;
  if (std::memcmp(in.data() + 4, kDurableSignature, sizeof kDurableSignature) != 0) return false;
  const uint8_t* p = p8(in.data());
  const uint64_t lsn = get_be64(p + 9);
  const uint64_t durable_lsn = get_be64(p + 17);
  if (get_be32(p + 25) != durable_check(lsn, durable_lsn) || durable_lsn >= lsn) return false;
  *out = DurableClaim{lsn, durable_lsn};
  return true;
}

BytesView durable_entry_signature() {
  return BytesView(kDurableSignature, sizeof kDurableSignature);
}

Status apply_updates(const Layout& l, const Entry& put, char* fields) {
  ByteReader r(put.updates, "WAL put");  // short: see decode_entry
  auto bad = [&](const std::string& why) {
    return Error(Errc::corrupt, fmt::format("WAL put lsn {} slot {}: {}", put.lsn, put.slot, why));
  };
  for (size_t i = 0; i < put.n_updates; ++i) {
    uint8_t fid = 0, present = 0;
    r.u8(&fid, "field id");
    r.u8(&present, "presence");
    if (r.failed()) return r.error();
    if (fid >= l.fields.size()) return bad(fmt::format("field id {} not in schema", fid));
    if (present > 1) return bad("bad presence byte");
    const FieldLayout& f = l.fields[fid];
    char* dst = fields + f.offset;
    std::memset(dst, 0, f.size);
    if (!present) continue;
    dst[0] = 1;
    for (size_t e = 0; e < f.elements.size(); ++e) {
      char* q = dst + f.element_offset[e];
      const Element& el = f.elements[e];
      BytesView v;
      switch (el.kind) {
        case ElementKind::u64:
          r.bytes(8, &v, "u64");
          if (!r.failed()) std::memcpy(q, v.data(), 8);
          break;
        case ElementKind::interned:
          r.bytes(4, &v, "string id");
          if (!r.failed()) {
            if (get_be32(p8(v.data())) >= l.strings) return bad("string id out of range");
            std::memcpy(q, v.data(), 4);
          }
          break;
        case ElementKind::bytes: {
          uint16_t len = 0;
          r.be16(&len, "bytes length");
          if (!r.failed() && len > el.max_len) return bad("bytes value longer than its field");
          r.bytes(len, &v, "bytes");
          if (!r.failed()) {
            put_be16(p8(q), len);
            std::memcpy(q + 2, v.data(), len);
          }
          break;
        }
      }
      if (r.failed()) return r.error();
    }
  }
  if (r.remaining() != 0) return bad(fmt::format("{} trailing bytes", r.remaining()));
  return Status::OK();
}

std::string describe_key(BytesView key) {
  for (unsigned char c : key) {
    if (c < 0x20 || c >= 0x7f) return "0x" + to_hex(key);
  }
  return "'" + std::string(key) + "'";
}

void referenced_strings(const Layout& l, const char* fields, std::vector<uint32_t>* out) {
  for (const FieldLayout& f : l.fields) {
    const char* p = fields + f.offset;
    if (!p[0]) continue;
    for (size_t e = 0; e < f.elements.size(); ++e) {
      if (f.elements[e].kind == ElementKind::interned) {
        out->push_back(get_be32(p8(p + f.element_offset[e])));
      }
    }
  }
}

}  // namespace strata::slotstore::format
