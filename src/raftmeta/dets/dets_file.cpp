#include "raftmeta/dets/dets_file.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include "common/endian.h"
#include "common/file_window.h"
#include "raftmeta/dets/dets_format.h"

namespace strata::raftmeta::dets {
namespace {

Error corrupt_at(const std::string& path, uint64_t pos, const std::string& msg) {
  return Error(Errc::corrupt, path + ": byte " + std::to_string(pos) + ": " + msg);
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

uint32_t be32_at(BytesView b, size_t off) {
  return get_be32(u8(b.data() + off));
}

// The buddy block a collection of `size` bytes occupies: the next power of
// two >= size (DETS allocates nothing smaller than the 16-byte grid).
uint64_t buddy_block(uint32_t size) {
  uint64_t b = kGrid;
  while (b < size) b <<= 1;
  return b;
}

// Sequential reads through a window of the file, so that the scan and the
// object walk (both in file order) cost one read per MiB. A view returned
// by read() is valid until the next call.
class WindowReader {
 public:
  WindowReader(File& f, uint64_t size, const std::string& path)
      : window_(f, size, kWindow), size_(size), path_(path) {}

  Result<BytesView> read(uint64_t pos, uint64_t n, const std::string& what) {
    if (pos > size_ || n > size_ - pos) {
      return corrupt_at(path_, pos,
                        what + " needs " + std::to_string(n) +
                            " bytes here but the file ends at byte " + std::to_string(size_));
    }
    return window_.read(pos, size_t(n));
  }

 private:
  static constexpr size_t kWindow = 1 << 20;
  FileWindow window_;
  uint64_t size_;
  const std::string& path_;
};

// Called with each object of a collection: its size word's file offset and
// its decoded term.
using ObjectFn = std::function<Status(uint64_t position, etf::Term&& term)>;

// Parses the objects of the collection `c` (all Size bytes of it, header
// included) that starts at file offset `pos`: a chain of {ObjSize, term}
// that must fill the collection exactly, each term a tuple with at least
// `keypos` elements. `where` names the collection in messages.
Status parse_objects(const std::string& path, uint64_t pos, BytesView c, uint32_t keypos,
                     const std::string& where, const ObjectFn& fn) {
  size_t off = kCollectionHeaderSize;
  while (off < c.size()) {
    const uint64_t at = pos + off;
    if (c.size() - off < 4) {
      return corrupt_at(path, at,
                        "object size word of " + where +
                            " is cut by the collection's end at byte " +
                            std::to_string(pos + c.size()));
    }
    const uint32_t osz = be32_at(c, off);
    if (osz <= 4 || osz > c.size() - off) {
      return corrupt_at(path, at,
                        "object size " + std::to_string(osz) + " in " + where +
                            " does not fit the collection (it ends at byte " +
                            std::to_string(pos + c.size()) + ")");
    }
    auto term = etf::decode(c.substr(off + 4, osz - 4), at + 4, path);
    if (!term.ok()) {
      Error e = std::move(term).error();
      e.message += " (in the object at byte " + std::to_string(at) + " of " + where + ")";
      return e;
    }
    const etf::Tuple* t = term->tuple();
    if (t == nullptr || t->elements.size() < keypos) {
      return corrupt_at(path, at,
                        "object in " + where + " is " + etf::to_string(*term, 200) +
                            ", but a DETS object is a tuple of at least " + std::to_string(keypos) +
                            " elements");
    }
    STRATA_TRY(fn(at, std::move(term).value()));
    off += osz;
  }
  return Status::OK();
}

// ---- header checks (DetsReader::validate_header) ----

// Reads the header words of a file of `size` bytes whose first bytes are
// `head`; fails for a file too short to be DETS or without its magic.
Result<Header> parse_header(const std::string& path, uint64_t size, BytesView head) {
  if (size < 8) {
    return corrupt_at(path, 0,
                      "not a DETS file: it is " + std::to_string(size) +
                          " bytes long, too short for a DETS header");
  }
  Header h;
  h.cookie = be32_at(head, kCookiePos);
  if (h.cookie != kMagic) {
    return corrupt_at(
        path, kCookiePos,
        "not a DETS file: magic is " + hex32(h.cookie) + ", expected " + hex32(kMagic));
  }
  if (size < kBase) {
    return corrupt_at(path, size,
                      "DETS file truncated: " + std::to_string(size) +
                          " bytes, but its header and segment array alone take " +
                          std::to_string(kBase));
  }
  h.freelists_pointer = be32_at(head, kFreelistsPointerPos);
  h.closed_properly = be32_at(head, kClosedProperlyPos);
  h.type = be32_at(head, kTypePos);
  h.version = be32_at(head, kVersionPos);
  h.m = be32_at(head, kMPos);
  h.next = be32_at(head, kNextPos);
  h.keypos = be32_at(head, kKeyposPos);
  h.no_objects = be32_at(head, kNoObjectsPos);
  h.no_keys = be32_at(head, kNoKeysPos);
  h.min_no_slots = be32_at(head, kMinNoSlotsPos);
  h.max_no_slots = be32_at(head, kMaxNoSlotsPos);
  h.hash_method = be32_at(head, kHashMethodPos);
  h.n = be32_at(head, kNPos);
  h.fl_base = be32_at(head, kFlBasePos);
  h.has_md5 = head.substr(kMd5Pos, 16).find_first_not_of('\0') != BytesView::npos;
  return h;
}

// Format version 9, and the header MD5 when the file has one.
Status check_version_and_md5(const std::string& path, const Header& h, BytesView head) {
  if (h.version != kFormatVersion) {
    return Error(Errc::unsupported_version,
                 path + ": byte " + std::to_string(kVersionPos) + ": DETS format version " +
                     std::to_string(h.version) + "; this reader reads version " +
                     std::to_string(kFormatVersion) + " (OTP R8 and later)");
  }
  // The MD5 covers type .. collection counters. Files of format 9(a)/(b)
  // have no MD5 (all zero); OTP 25 always writes one.
  if (!h.has_md5) return Status::OK();
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(head.data() + kMd5DigestFrom, kMd5DigestLen, digest, &len, EVP_md5(), nullptr) !=
          1 ||
      len != 16) {
    return Error(Errc::internal, path + ": computing the header MD5 failed (OpenSSL)");
  }
  if (BytesView(reinterpret_cast<const char*>(digest), 16) != head.substr(kMd5Pos, 16)) {
    return corrupt_at(path, kMd5Pos,
                      "header MD5 does not match bytes " + std::to_string(kMd5DigestFrom) + ".." +
                          std::to_string(kMd5Pos) + ": the header is damaged");
  }
  return Status::OK();
}

// The closed-properly flag, a table of type set, a known hash method and a
// key position.
Status check_table_kind(const std::string& path, const Header& h) {
  if (h.closed_properly != kClosedProperly && h.closed_properly != kNotClosedProperly) {
    return corrupt_at(path, kClosedProperlyPos,
                      "closed-properly flag is " + hex32(h.closed_properly) + ", expected 0 or 1");
  }
  if (h.type != kTypeSet) {
    const char* name = h.type == kTypeBag            ? "bag"
                       : h.type == kTypeDuplicateBag ? "duplicate_bag"
                                                     : nullptr;
    if (name == nullptr) {
      return corrupt_at(path, kTypePos,
                        "table type code " + std::to_string(h.type) + " is invalid");
    }
    return Error(Errc::schema_mismatch,
                 path + ": byte " + std::to_string(kTypePos) + ": DETS table of type " + name +
                     "; only tables of type set are read (Ra's meta.dets is a set)");
  }
  if (h.hash_method != kHashPhash && h.hash_method != kHashPhash2) {
    return corrupt_at(path, kHashMethodPos,
                      "hash method code " + std::to_string(h.hash_method) + " is invalid");
  }
  if (h.keypos < 1) return corrupt_at(path, kKeyposPos, "key position 0 is invalid");
  return Status::OK();
}

// Linear hashing invariants that DETS itself asserts (hash_invars/5).
Status check_hash_invariants(const std::string& path, const Header& h) {
  const auto m256 = [](uint64_t v) { return v % kSlotsPerSegment == 0; };
  const uint64_t m = h.m, next = h.next, n = h.n, mn = h.min_no_slots, mx = h.max_no_slots;
  if (!(m256(m) && m256(next) && m256(n) && m256(mn) && m256(mx) && n <= m && n <= 2 * next &&
        m <= next && next <= 2 * m && mn <= next && next <= mx && mn <= m && next >= 256 &&
        mx <= kMaxSlots)) {
    return corrupt_at(path, kMPos,
                      "hash table parameters are inconsistent (m=" + std::to_string(m) +
                          " next=" + std::to_string(next) + " n=" + std::to_string(n) +
                          " min=" + std::to_string(mn) + " max=" + std::to_string(mx) + ")");
  }
  return Status::OK();
}

// Where the area of parts, segments and collections ends: the free lists of
// a clean file (whose counts and pointer are checked here), the end of a
// file not closed properly. Also checks the allocator base.
Result<uint64_t> data_area_end(const std::string& path, uint64_t size, const Header& h) {
  if (h.fl_base != 0 && (h.fl_base < kBase || (h.fl_base - kBase) % kGrid != 0)) {
    return corrupt_at(path, kFlBasePos,
                      "allocator base " + std::to_string(h.fl_base) +
                          " is not on the 16-byte grid from byte " + std::to_string(kBase));
  }
  if (h.closed_properly != kClosedProperly) {
    // Not closed properly: DETS truncated the free lists away when it
    // started writing; live data may extend to the end of the file.
    return size;
  }
  if (h.no_keys != h.no_objects) {
    return corrupt_at(path, kNoKeysPos,
                      "a set holds one object per key, but the header counts " +
                          std::to_string(h.no_objects) + " objects and " +
                          std::to_string(h.no_keys) + " keys");
  }
  if (h.freelists_pointer < kBase || h.freelists_pointer > size - 4 - kFreeChunkHeaderSize) {
    return corrupt_at(path, kFreelistsPointerPos,
                      "free lists pointer " + std::to_string(h.freelists_pointer) +
                          " lies outside the file (" + std::to_string(size) + " bytes)");
  }
  return uint64_t(h.freelists_pointer);
}

}  // namespace

DetsReader::~DetsReader() = default;

uint64_t DetsReader::extent(const Block& b) {
  return b.kind == Block::collection ? buddy_block(b.size) : b.size;
}

std::string DetsReader::describe(const Block& b) {
  switch (b.kind) {
    case Block::part:
      return "segment array part " + std::to_string(b.slot);
    case Block::segment:
      return "segment " + std::to_string(b.slot) + " (slots " +
             std::to_string(uint64_t(b.slot) * kSlotsPerSegment) + ".." +
             std::to_string(uint64_t(b.slot + 1) * kSlotsPerSegment - 1) + ")";
    case Block::collection:
      return "the collection of slot " + std::to_string(b.slot);
  }
  return "block";
}

Result<std::unique_ptr<DetsReader>> DetsReader::open(FileSystem& fs, const std::string& path,
                                                     const ObjectCheck& check) {
  std::unique_ptr<DetsReader> r(new DetsReader());
  r->info_.path = path;
  STRATA_ASSIGN_OR_RETURN(r->file_, fs.open(path, OpenOptions::read_only()));
  STRATA_ASSIGN_OR_RETURN(r->info_.file_size, r->file_->size());
  Bytes head(std::min<uint64_t>(r->info_.file_size, kBase), '\0');
  STRATA_TRY(read_exact(*r->file_, 0, head.data(), head.size()));
  STRATA_TRY(r->validate_header(head));
  if (r->info_.closed_properly) STRATA_TRY(r->validate_trailer_and_free_lists());
  STRATA_TRY(r->read_hash_table());
  STRATA_TRY(r->check_free_blocks());
  STRATA_TRY(r->scan(check));
  return r;
}

// The checks run in the order DETS's own open would fail on them: what the
// file is (size, magic), which format (version, MD5), what kind of table,
// the hashing invariants, then where the data area ends.
Status DetsReader::validate_header(BytesView head) {
  const std::string& path = info_.path;
  STRATA_ASSIGN_OR_RETURN(header_, parse_header(path, info_.file_size, head));
  const Header& h = header_;
  STRATA_TRY(check_version_and_md5(path, h, head));
  STRATA_TRY(check_table_kind(path, h));
  info_.closed_properly = h.closed_properly == kClosedProperly;
  info_.keypos = h.keypos;
  info_.header_object_count = h.no_objects;
  STRATA_TRY(check_hash_invariants(path, h));
  STRATA_ASSIGN_OR_RETURN(data_end_, data_area_end(path, info_.file_size, h));
  return Status::OK();
}

Status DetsReader::validate_trailer_and_free_lists() {
  const std::string& path = info_.path;
  const uint64_t size = info_.file_size;
  Bytes tail(size - header_.freelists_pointer, '\0');
  STRATA_TRY(read_exact(*file_, header_.freelists_pointer, tail.data(), tail.size()));
  const uint64_t trailer = be32_at(tail, tail.size() - 4);
  if (trailer + header_.fl_base != size) {
    return corrupt_at(
        path, size - 4,
        "the header says the file was closed properly, but its trailer records a size of " +
            std::to_string(trailer + header_.fl_base) + " bytes and the file has " +
            std::to_string(size) + ": truncated or extended since DETS closed it");
  }
  // The free lists: chunks {Size, FREE, BuddyIndex, Addresses..} ending
  // with {12, FREE, 12345} right before the trailer.
  BytesView fl = BytesView(tail).substr(0, tail.size() - 4);
  size_t off = 0;
  while (true) {
    const uint64_t at = header_.freelists_pointer + off;
    if (fl.size() - off < kFreeChunkHeaderSize) {
      return corrupt_at(path, at, "free lists end without their end marker");
    }
    const uint32_t csize = be32_at(fl, off), status = be32_at(fl, off + 4),
                   index = be32_at(fl, off + 8);
    if (status != kFree) {
      return corrupt_at(
          path, at + 4,
          "free list chunk status is " + hex32(status) + ", expected " + hex32(kFree));
    }
    if (index == kEndFree) {
      if (csize != kFreeChunkHeaderSize || off + kFreeChunkHeaderSize != fl.size()) {
        return corrupt_at(path, at,
                          "free lists end marker is malformed or not right before the trailer");
      }
      return Status::OK();
    }
    if (csize < kFreeChunkHeaderSize + 4 || (csize - kFreeChunkHeaderSize) % 4 != 0 ||
        csize > fl.size() - off || index < 1 || index > kMaxBuddyIndex) {
      return corrupt_at(path, at,
                        "free list chunk of size " + std::to_string(csize) + " for buddy index " +
                            std::to_string(index) + " is malformed");
    }
    for (size_t a = off + kFreeChunkHeaderSize; a < off + csize; a += 4) {
      const uint32_t addr = be32_at(fl, a);
      if (a > off + kFreeChunkHeaderSize && addr <= be32_at(fl, a - 4)) {
        return corrupt_at(path, header_.freelists_pointer + a,
                          "free list addresses are not ascending");
      }
      free_blocks_.emplace_back(addr, uint64_t(1) << (index - 1));
    }
    off += csize;
  }
}

Status DetsReader::read_hash_table() {
  const std::string& path = info_.path;
  // Every block must sit on the allocation grid and inside the data area.
  const auto check_block = [&](uint64_t entry_pos, uint64_t pos, uint64_t len,
                               const std::string& what) -> Status {
    if (pos < kBase || (pos - kBase) % kGrid != 0 || pos > data_end_ || len > data_end_ - pos) {
      return corrupt_at(
          path, entry_pos,
          what + " points to byte " + std::to_string(pos) + " (" + std::to_string(len) +
              " bytes), which is not a block of the data area (16-byte grid from byte " +
              std::to_string(kBase) + " to byte " + std::to_string(data_end_) + ")");
    }
    return Status::OK();
  };

  Bytes array(4 * kSegmentArrayParts, '\0');
  STRATA_TRY(read_exact(*file_, kSegmentArrayPos, array.data(), array.size()));
  std::vector<uint32_t> parts;
  for (uint32_t p = 0; p < kSegmentArrayParts; ++p) {
    const uint32_t ptr = be32_at(array, 4 * p);
    const uint64_t entry = kSegmentArrayPos + 4 * p;
    if (ptr == 0) continue;
    if (parts.size() != p) {
      return corrupt_at(path, entry,
                        "segment array entry " + std::to_string(p) + " is set but entry " +
                            std::to_string(parts.size()) + " before it is empty");
    }
    STRATA_TRY(check_block(entry, ptr, kPartBytes, "segment array entry " + std::to_string(p)));
    parts.push_back(ptr);
    blocks_.push_back({ptr, kPartBytes, p, Block::part});
  }

  std::vector<uint32_t> segments;
  Bytes buf(kPartBytes, '\0');
  for (size_t p = 0; p < parts.size(); ++p) {
    STRATA_TRY(read_exact(*file_, parts[p], buf.data(), kPartBytes));
    for (uint32_t j = 0; j < kSegmentsPerPart; ++j) {
      const uint32_t ptr = be32_at(buf, 4 * j);
      const uint64_t entry = parts[p] + 4 * j;
      const uint64_t segno = uint64_t(p) * kSegmentsPerPart + j;
      if (ptr == 0) continue;
      if (segments.size() != segno) {
        return corrupt_at(path, entry,
                          "segment " + std::to_string(segno) + " is allocated but segment " +
                              std::to_string(segments.size()) + " before it is not");
      }
      STRATA_TRY(check_block(entry, ptr, kSegmentBytes,
                             "the pointer to segment " + std::to_string(segno)));
      segments.push_back(ptr);
      blocks_.push_back({ptr, kSegmentBytes, uint32_t(segno), Block::segment});
    }
  }
  const uint64_t parts_needed = (segments.size() + kSegmentsPerPart - 1) / kSegmentsPerPart;
  if (parts.size() != parts_needed) {
    return corrupt_at(path, kSegmentArrayPos,
                      std::to_string(parts.size()) + " segment array parts hold " +
                          std::to_string(segments.size()) + " segments, which need " +
                          std::to_string(parts_needed));
  }
  // A clean file has exactly the segments its header's `next` uses. In a
  // file not closed properly the table may have grown after the header was
  // last written, so more segments are fine (and are read).
  const uint64_t slots = uint64_t(segments.size()) * kSlotsPerSegment;
  if (info_.closed_properly ? slots != header_.next : slots < header_.next) {
    return corrupt_at(path, kNextPos,
                      "the header says " + std::to_string(header_.next) +
                          " slots are in use, but the table has " +
                          std::to_string(segments.size()) + " segments (" + std::to_string(slots) +
                          " slots)");
  }
  info_.slot_count = slots;

  for (size_t s = 0; s < segments.size(); ++s) {
    STRATA_TRY(read_exact(*file_, segments[s], buf.data(), kSegmentBytes));
    for (uint32_t j = 0; j < kSlotsPerSegment; ++j) {
      const uint32_t size = be32_at(buf, kSlotEntrySize * j);
      const uint32_t ptr = be32_at(buf, kSlotEntrySize * j + 4);
      const uint64_t entry = segments[s] + kSlotEntrySize * j;
      const uint32_t slot = uint32_t(s * kSlotsPerSegment + j);
      if (size == 0 && ptr == 0) continue;
      if (size <= kCollectionHeaderSize || ptr == 0) {
        return corrupt_at(path, entry,
                          "slot " + std::to_string(slot) + " has collection size " +
                              std::to_string(size) + " at position " + std::to_string(ptr) +
                              "; a used slot has a position and a size above 8");
      }
      STRATA_TRY(check_block(entry, ptr, size, "slot " + std::to_string(slot)));
      blocks_.push_back({ptr, size, slot, Block::collection});
      ++info_.collection_count;
    }
  }

  std::sort(blocks_.begin(), blocks_.end(),
            [](const Block& a, const Block& b) { return a.position < b.position; });
  for (size_t i = 0; i + 1 < blocks_.size(); ++i) {
    const Block &a = blocks_[i], &b = blocks_[i + 1];
    if (a.position + extent(a) > b.position) {
      return corrupt_at(path, b.position,
                        describe(b) + " starts inside " + describe(a) + " (at byte " +
                            std::to_string(a.position) + ", " + std::to_string(extent(a)) +
                            " bytes)");
    }
  }
  return Status::OK();
}

// A clean file's free lists must not hand out space that a part, segment
// or collection uses: that would mean the hash table points into freed
// space (or the free lists are damaged, which DETS would act on later).
Status DetsReader::check_free_blocks() {
  std::sort(free_blocks_.begin(), free_blocks_.end());
  size_t k = 0;
  for (const auto& [pos, len] : free_blocks_) {
    if (pos < kBase || (pos - kBase) % kGrid != 0) {
      return corrupt_at(info_.path, header_.freelists_pointer,
                        "the free lists hold a block at byte " + std::to_string(pos) +
                            ", which is not on the 16-byte grid from byte " +
                            std::to_string(kBase));
    }
    // Blocks are sorted and disjoint: skip those that end before this one.
    while (k < blocks_.size() && blocks_[k].position + extent(blocks_[k]) <= pos) ++k;
    if (k < blocks_.size() && blocks_[k].position < pos + len) {
      return corrupt_at(info_.path, blocks_[k].position,
                        describe(blocks_[k]) + " lies in a block the free lists say is free (" +
                            std::to_string(len) + " bytes at byte " + std::to_string(pos) + ")");
    }
  }
  free_blocks_ = {};
  return Status::OK();
}

// Walks the data area in file order, in steps of the 16-byte grid, the way
// DETS's repair does: blocks found through the hash table are validated
// strictly; anywhere else, a word that marks an ACTIVE collection is checked
// for an intact collection that no slot points to.
Status DetsReader::scan(const ObjectCheck& check) {
  const std::string& path = info_.path;
  WindowReader reader(*file_, info_.file_size, path);
  // Each key once: a key's canonical bytes -> where it was first seen.
  std::unordered_map<Bytes, uint64_t> keys;
  // The header's count is a good hint even when stale; an object takes at
  // least 8 bytes, which bounds a damaged one.
  keys.reserve(std::min<uint64_t>(std::max<uint64_t>(header_.no_objects, info_.collection_count),
                                  info_.file_size / 8));
  uint64_t objects = 0;
  const uint32_t keypos = info_.keypos;

  size_t k = 0;
  uint64_t pos = kBase;
  while (true) {
    if (k < blocks_.size() && blocks_[k].position < pos) {
      // Blocks do not overlap (checked), so this one is off the grid walk.
      return corrupt_at(path, blocks_[k].position,
                        describe(blocks_[k]) + " is not aligned with the blocks before it");
    }
    if (k < blocks_.size() && blocks_[k].position == pos) {
      const Block& b = blocks_[k];
      if (b.kind == Block::collection) {
        const std::string where = describe(b);
        STRATA_ASSIGN_OR_RETURN(BytesView c, reader.read(pos, b.size, where));
        const uint32_t size = be32_at(c, 0), status = be32_at(c, 4);
        if (size != b.size) {
          return corrupt_at(path, pos,
                            where + " has size word " + std::to_string(size) +
                                ", but its slot says " + std::to_string(b.size));
        }
        if (status != kActive) {
          return corrupt_at(path, pos + 4,
                            where + " has status " + hex32(status) + ", expected ACTIVE " +
                                hex32(kActive) +
                                (status == kFree ? " (the slot points at freed space)" : ""));
        }
        STRATA_TRY(parse_objects(path, pos, c, keypos, where, [&](uint64_t at, etf::Term&& term) {
          const Object obj{at, b.slot, std::move(term)};
          const etf::Term& key = obj.term.tuple()->elements[keypos - 1];
          Bytes canonical;
          etf::append_canonical(key, &canonical);
          auto [it, fresh] = keys.emplace(std::move(canonical), at);
          if (!fresh) {
            return Status(
                corrupt_at(path, at,
                           "key " + etf::to_string(key, 200) + " is stored twice (also at byte " +
                               std::to_string(it->second) + "); a set holds each key once"));
          }
          ++objects;
          return check ? check(obj) : Status::OK();
        }));
      }
      pos += extent(b);
      ++k;
      continue;
    }
    if (pos >= data_end_ || data_end_ - pos < kCollectionHeaderSize + 8) {
      if (k == blocks_.size()) break;
      pos += kGrid;  // too close to the end for a collection; blocks remain
      continue;
    }

    // Free space. Cheap checks first (16 bytes: the header and the first
    // object's size word and version byte), then the whole candidate.
    STRATA_ASSIGN_OR_RETURN(BytesView h, reader.read(pos, kCollectionHeaderSize + 8, "scan"));
    if (be32_at(h, 4) == kActive) {
      const uint32_t size = be32_at(h, 0), osz = be32_at(h, 8);
      bool intact = false;
      uint64_t found = 0;
      std::string first_key;
      if (size > kCollectionHeaderSize + 4 && size <= data_end_ - pos && osz > 4 &&
          osz <= size - kCollectionHeaderSize && uint8_t(h[12]) == etf::kVersionMagic) {
        STRATA_ASSIGN_OR_RETURN(BytesView c, reader.read(pos, size, "scan"));
        intact = parse_objects(path, pos, c, keypos, "an unreferenced collection",
                               [&](uint64_t, etf::Term&& term) -> Status {
                                 if (found++ == 0) {
                                   first_key =
                                       etf::to_string(term.tuple()->elements[keypos - 1], 200);
                                 }
                                 return Status::OK();
                               })
                     .ok();
      }
      if (intact) {
        return corrupt_at(
            path, pos,
            "an intact ACTIVE collection of " + std::to_string(found) + " object(s) (first key " +
                first_key + ") is not referenced by any slot: " +
                (info_.closed_properly
                     ? std::string("the hash table is damaged")
                     : std::string("the file was not closed properly and DETS's repair would ") +
                           "bring this back; open and close it once with Erlang's dets " +
                           "(which repairs it) and read it again"));
      }
      ++info_.stale_headers_skipped;
    }
    pos += kGrid;
  }
  if (k != blocks_.size()) {
    return corrupt_at(path, blocks_[k].position,
                      describe(blocks_[k]) + " lies past the end of the data area at byte " +
                          std::to_string(data_end_));
  }
  info_.object_count = objects;
  if (info_.closed_properly && objects != header_.no_objects) {
    return corrupt_at(path, kNoObjectsPos,
                      "the header counts " + std::to_string(header_.no_objects) +
                          " objects but the hash table reaches " + std::to_string(objects));
  }
  return Status::OK();
}

Status DetsReader::for_each(const std::function<Status(const Object&)>& fn) {
  const std::string& path = info_.path;
  WindowReader reader(*file_, info_.file_size, path);
  uint64_t objects = 0;
  for (const Block& b : blocks_) {
    if (b.kind != Block::collection) continue;
    const std::string where = describe(b);
    STRATA_ASSIGN_OR_RETURN(BytesView c, reader.read(b.position, b.size, where));
    if (be32_at(c, 0) != b.size || be32_at(c, 4) != kActive) {
      return corrupt_at(path, b.position, where + " changed since the file was opened");
    }
    STRATA_TRY(parse_objects(path, b.position, c, info_.keypos, where,
                             [&](uint64_t at, etf::Term&& term) -> Status {
                               ++objects;
                               return fn(Object{at, b.slot, std::move(term)});
                             }));
  }
  if (objects != info_.object_count) {
    return Error(Errc::corrupt, path + ": the file changed since it was opened (" +
                                    std::to_string(objects) + " objects now, " +
                                    std::to_string(info_.object_count) + " then)");
  }
  return Status::OK();
}

}  // namespace strata::raftmeta::dets
