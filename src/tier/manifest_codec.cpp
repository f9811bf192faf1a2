#include "tier/manifest_codec.h"

#include <fmt/format.h>

#include "common/crc32c.h"
#include "common/endian.h"

namespace strata::tier {

namespace {

constexpr uint8_t kEditAppend = 1;
constexpr uint8_t kEditTruncate = 2;
constexpr uint8_t kEditReplace = 3;

Error corrupt(const std::string& what, const std::string& where, const std::string& why) {
  return Error(Errc::corrupt, fmt::format("{} {}: {}", what, where, why));
}

struct Header {
  uint32_t magic;
  uint8_t level;
  uint64_t first_offset, next_offset;
  int64_t first_ts, last_ts;
  uint64_t total_size, epoch;
  uint32_t count;
};

Bytes encode_object(const Header& h, const std::vector<ManifestEntry>& entries) {
  Bytes out(encoded_root_size(entries.size()), '\0');
  uint8_t* p = u8(out.data());
  put_be32(p, h.magic);
  put_be16(p + 4, kManifestVersion);
  p[6] = h.level;
  p[7] = 0;
  put_be64(p + 8, h.first_offset);
  put_be64(p + 16, h.next_offset);
  put_be64(p + 24, uint64_t(h.first_ts));
  put_be64(p + 32, uint64_t(h.last_ts));
  put_be64(p + 40, h.total_size);
  put_be64(p + 48, h.epoch);
  put_be32(p + 56, uint32_t(entries.size()));
  put_be32(p + 60, 0);
  uint8_t* e = p + kManifestHeaderSize;
  for (const ManifestEntry& x : entries) {
    encode_entry(x, e);
    e += kManifestEntrySize;
  }
  put_be32(e, crc32c::value(p, size_t(e - p)));
  return out;
}

// Decodes the common header and entries; checks magic, version, CRC, sizes.
Result<Header> decode_object(BytesView in, uint32_t magic, const char* what,
                             const std::string& where, std::vector<ManifestEntry>* entries) {
  if (in.size() < kManifestHeaderSize + kManifestCrcSize) {
    return corrupt(what, where,
                   fmt::format("truncated: {} bytes, the header and CRC alone are {}", in.size(),
                               kManifestHeaderSize + kManifestCrcSize));
  }
  const uint8_t* p = u8(in.data());
  Header h;
  h.magic = get_be32(p);
  if (h.magic != magic) {
    return corrupt(what, where,
                   fmt::format("wrong magic {:#010x} (expected {:#010x})", h.magic, magic));
  }
  uint16_t version = get_be16(p + 4);
  if (version != kManifestVersion) {
    return Error(Errc::unsupported_version, fmt::format("{} {}: version {} (this build reads {})",
                                                        what, where, version, kManifestVersion));
  }
  size_t body = in.size() - kManifestHeaderSize - kManifestCrcSize;
  h.count = get_be32(p + 56);
  if (body % kManifestEntrySize != 0) {
    return corrupt(what, where,
                   fmt::format("truncated entry: {} entry bytes is not a multiple "
                               "of {}",
                               body, kManifestEntrySize));
  }
  if (body / kManifestEntrySize != h.count) {
    return corrupt(what, where,
                   fmt::format("header says {} entries but the object holds {}", h.count,
                               body / kManifestEntrySize));
  }
  size_t crc_pos = in.size() - kManifestCrcSize;
  uint32_t want = get_be32(p + crc_pos);
  uint32_t got = crc32c::value(p, crc_pos);
  if (want != got) {
    return corrupt(what, where,
                   fmt::format("CRC mismatch (stored {:#010x}, computed {:#010x})", want, got));
  }
  if (p[7] != 0 || get_be32(p + 60) != 0) {
    return corrupt(what, where, "reserved header bytes are not zero");
  }
  h.level = p[6];
  h.first_offset = get_be64(p + 8);
  h.next_offset = get_be64(p + 16);
  h.first_ts = int64_t(get_be64(p + 24));
  h.last_ts = int64_t(get_be64(p + 32));
  h.total_size = get_be64(p + 40);
  h.epoch = get_be64(p + 48);
  entries->resize(h.count);
  for (uint32_t i = 0; i < h.count; ++i) {
    (*entries)[i] = decode_entry(p + kManifestHeaderSize + size_t(i) * kManifestEntrySize);
  }
  return h;
}

void put_truncate(Bytes& out, const TruncateEdit& t) {
  ByteWriter w(&out);
  w.be32(t.remove_entries);
  w.be64(t.first_offset);
  w.be64(uint64_t(t.first_ts));
  w.be64(t.removed_bytes);
}

void put_entry(Bytes& out, const ManifestEntry& e) {
  size_t at = out.size();
  out.resize(at + kManifestEntrySize);
  encode_entry(e, u8(out.data()) + at);
}

}  // namespace

void encode_entry(const ManifestEntry& e, uint8_t* p) {
  put_be64(p, e.offset);
  put_be64(p + 8, uint64_t(e.first_ts));
  put_be64(p + 16, uint64_t(e.last_ts));
  put_be64(p + 24, e.size);
  put_be64(p + 32, e.epoch);
  put_be32(p + 40, e.uid);
  p[44] = e.kind;
}

ManifestEntry decode_entry(const uint8_t* p) {
  ManifestEntry e;
  e.offset = get_be64(p);
  e.first_ts = int64_t(get_be64(p + 8));
  e.last_ts = int64_t(get_be64(p + 16));
  e.size = get_be64(p + 24);
  e.epoch = get_be64(p + 32);
  e.uid = get_be32(p + 40);
  e.kind = p[44];
  return e;
}

Bytes encode_root(const Manifest& m, uint64_t writer_epoch) {
  return encode_object(Header{kRootMagic, 0, m.first_offset, m.next_offset, m.first_ts, m.last_ts,
                              m.total_size, writer_epoch, uint32_t(m.entries.size())},
                       m.entries);
}

Result<DecodedRoot> decode_root(BytesView in, const std::string& where) {
  DecodedRoot out;
  STRATA_ASSIGN_OR_RETURN(
      Header h, decode_object(in, kRootMagic, "manifest root", where, &out.manifest.entries));
  if (h.level != 0) return corrupt("manifest root", where, fmt::format("level {}", h.level));
  out.writer_epoch = h.epoch;
  Manifest& m = out.manifest;
  m.first_offset = h.first_offset;
  m.next_offset = h.next_offset;
  m.first_ts = h.first_ts;
  m.last_ts = h.last_ts;
  m.total_size = h.total_size;
  STRATA_TRY(validate_manifest(m, "root " + where));
  return out;
}

Bytes encode_group(const ManifestGroup& g) {
  return encode_object(Header{kGroupMagic, g.level, g.first_offset, g.next_offset, g.first_ts,
                              g.last_ts, g.total_size, g.epoch, uint32_t(g.entries.size())},
                       g.entries);
}

Result<ManifestGroup> decode_group(BytesView in, const std::string& where) {
  ManifestGroup g;
  STRATA_ASSIGN_OR_RETURN(Header h,
                          decode_object(in, kGroupMagic, "manifest group", where, &g.entries));
  const char* what = "manifest group";
  if (h.level == 0 || h.level > kMaxKind) {
    return corrupt(what, where,
                   fmt::format("level {} (groups have levels 1..{})", h.level, kMaxKind));
  }
  if (g.entries.empty()) return corrupt(what, where, "no entries");
  g.level = h.level;
  g.first_offset = h.first_offset;
  g.next_offset = h.next_offset;
  g.first_ts = h.first_ts;
  g.last_ts = h.last_ts;
  g.total_size = h.total_size;
  g.epoch = h.epoch;
  if (g.entries.front().offset != g.first_offset) {
    return corrupt(what, where,
                   fmt::format("first entry at {} but the group starts at {}",
                               g.entries.front().offset, g.first_offset));
  }
  if (g.entries.back().offset >= g.next_offset) {
    return corrupt(what, where,
                   fmt::format("last entry at {} not below the group's next offset "
                               "{}",
                               g.entries.back().offset, g.next_offset));
  }
  uint64_t sum = 0;
  for (size_t i = 0; i < g.entries.size(); ++i) {
    const ManifestEntry& e = g.entries[i];
    if (e.kind + 1 != g.level) {
      return corrupt(what, where,
                     fmt::format("entry {} has kind {} in a level-{} group", i, e.kind, g.level));
    }
    if (i > 0 && e.offset <= g.entries[i - 1].offset) {
      return corrupt(what, where,
                     fmt::format("non-monotonic offsets: entry {} at {} after {}", i, e.offset,
                                 g.entries[i - 1].offset));
    }
    if (e.first_ts > e.last_ts) {
      return corrupt(what, where, fmt::format("entry {} first timestamp after last", i));
    }
    if (e.size == 0) return corrupt(what, where, fmt::format("entry {} has zero bytes", i));
    if (__builtin_add_overflow(sum, e.size, &sum)) {
      return corrupt(what, where, "size overflow: entry sizes exceed 64 bits");
    }
  }
  if (sum != g.total_size) {
    return corrupt(
        what, where,
        fmt::format("size overflow: entries hold {} bytes, header says {}", sum, g.total_size));
  }
  return g;
}

Bytes encode_edit_batch(const EditBatch& b) {
  Bytes out;
  ByteWriter w(&out);
  w.be32(kEditBatchMagic);
  w.be16(kManifestVersion);
  w.be16(0);
  w.be64(b.epoch);
  w.be64(b.prev_revision);
  w.be64(b.revision);
  w.be32(uint32_t(b.edits.size()));
  for (const ManifestEdit& e : b.edits) {
    if (auto* a = std::get_if<AppendEdit>(&e)) {
      w.u8(kEditAppend);
      put_entry(out, a->entry);
      w.be64(a->next_offset);
    } else if (auto* t = std::get_if<TruncateEdit>(&e)) {
      w.u8(kEditTruncate);
      put_truncate(out, *t);
    } else {
      const auto& r = std::get<ReplaceEdit>(e);
      w.u8(kEditReplace);
      w.be32(r.position);
      w.be32(r.count);
      put_entry(out, r.group);
    }
  }
  w.be32(crc32c::value(out));
  return out;
}

Result<EditBatch> decode_edit_batch(BytesView in, const std::string& where) {
  const char* what = "manifest edit batch";
  if (in.size() < kManifestCrcSize) return corrupt(what, where, "truncated");
  size_t crc_pos = in.size() - kManifestCrcSize;
  ByteReader r(in.substr(0, crc_pos), std::string(what) + " " + where);
  uint32_t magic = 0;
  uint16_t version = 0, reserved = 0;
  EditBatch b;
  uint32_t count = 0;
  r.be32(&magic, "magic");
  r.be16(&version, "version");
  r.be16(&reserved, "reserved");
  r.be64(&b.epoch, "epoch");
  r.be64(&b.prev_revision, "prev_revision");
  r.be64(&b.revision, "revision");
  r.be32(&count, "edit count");
  if (r.failed()) return r.error();
  if (magic != kEditBatchMagic) {
    return corrupt(what, where,
                   fmt::format("wrong magic {:#010x} (expected {:#010x})", magic, kEditBatchMagic));
  }
  if (version != kManifestVersion) {
    return Error(Errc::unsupported_version, fmt::format("{} {}: version {} (this build reads {})",
                                                        what, where, version, kManifestVersion));
  }
  uint32_t want = get_be32(u8(in.data()) + crc_pos);
  uint32_t got = crc32c::value(in.data(), crc_pos);
  if (want != got) {
    return corrupt(what, where,
                   fmt::format("CRC mismatch (stored {:#010x}, computed {:#010x})", want, got));
  }
  if (reserved != 0) return corrupt(what, where, "reserved bytes are not zero");
  // Each edit is at least 29 bytes; a count beyond that is a lie to refuse
  // before allocating.
  if (uint64_t(count) * 29 > r.remaining()) {
    return corrupt(what, where,
                   fmt::format("{} edits cannot fit in {} bytes", count, r.remaining()));
  }
  b.edits.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    uint8_t type = 0;
    if (!r.u8(&type, "edit type")) return r.error();
    BytesView ev;
    if (type == kEditAppend) {
      AppendEdit a;
      if (!r.bytes(kManifestEntrySize, &ev, "append entry")) return r.error();
      a.entry = decode_entry(u8(ev.data()));
      if (!r.be64(&a.next_offset, "append next_offset")) return r.error();
      b.edits.push_back(a);
    } else if (type == kEditTruncate) {
      TruncateEdit t;
      uint64_t ts = 0;
      r.be32(&t.remove_entries, "truncate remove_entries");
      r.be64(&t.first_offset, "truncate first_offset");
      r.be64(&ts, "truncate first_ts");
      r.be64(&t.removed_bytes, "truncate removed_bytes");
      if (r.failed()) return r.error();
      t.first_ts = int64_t(ts);
      b.edits.push_back(t);
    } else if (type == kEditReplace) {
      ReplaceEdit x;
      r.be32(&x.position, "replace position");
      r.be32(&x.count, "replace count");
      if (!r.bytes(kManifestEntrySize, &ev, "replace group entry")) return r.error();
      x.group = decode_entry(u8(ev.data()));
      b.edits.push_back(x);
    } else {
      return corrupt(what, where, fmt::format("edit {} has unknown type {}", i, type));
    }
  }
  if (r.remaining() != 0) {
    return corrupt(what, where,
                   fmt::format("{} trailing bytes after {} edits", r.remaining(), count));
  }
  return b;
}

}  // namespace strata::tier
