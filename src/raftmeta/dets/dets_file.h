// A reader of Erlang DETS files (format version 9, type set) as Ra writes
// its meta.dets. strata reads the file itself; it never needs Erlang.
//
// Contract: open() validates the whole file before anything is returned —
// header (magic, version, MD5, hashing invariants, trailer and free lists of
// a cleanly closed file), the hash table (segment array, parts, segments,
// every slot), every object collection the slots point to, every object's
// term, key uniqueness, and that no intact collection exists that no slot
// points to. Any failure is an Error naming the file, the byte position and
// what is wrong; a file either reads completely or not at all.
//
// Files that were not closed properly (Ra's node crashed; DETS would repair
// the file on its next open by scanning it for live collections) are read
// too: the hash table is the authority, and the scan for collections no slot
// points to is what makes this safe. If that scan finds one — a row DETS's
// repair would bring back, or an update interrupted half-way — open() fails
// rather than guess which version is right. See docs/formats/meta-dets.md.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/fs.h"
#include "common/result.h"
#include "raftmeta/dets/etf.h"

namespace strata::raftmeta::dets {

// The header fields, as stored.
struct Header {
  uint32_t freelists_pointer = 0;
  uint32_t cookie = 0;
  uint32_t closed_properly = 0;
  uint32_t type = 0;
  uint32_t version = 0;
  uint32_t m = 0;
  uint32_t next = 0;
  uint32_t keypos = 0;
  uint32_t no_objects = 0;
  uint32_t no_keys = 0;
  uint32_t min_no_slots = 0;
  uint32_t max_no_slots = 0;
  uint32_t hash_method = 0;
  uint32_t n = 0;
  uint32_t fl_base = 0;
  bool has_md5 = false;
};

// What open() established. Counts come from the file's contents, not from
// its header (whose counts are stale in a file not closed properly).
struct Info {
  std::string path;
  uint64_t file_size = 0;
  bool closed_properly = false;
  uint32_t keypos = 1;
  uint64_t object_count = 0;         // objects (rows) in the table
  uint64_t collection_count = 0;     // non-empty slots
  uint64_t slot_count = 0;           // slots of the allocated segments
  uint64_t header_object_count = 0;  // NoObjects as the header states it
  // Words in free space that look like a collection header but do not hold
  // an intact collection (left over from freed objects). DETS's repair
  // skips them too; reported for diagnosis.
  uint64_t stale_headers_skipped = 0;
};

struct Object {
  uint64_t position = 0;  // file offset of the object's size word
  uint32_t slot = 0;      // the hash slot whose collection holds it
  etf::Term term;         // a tuple with at least `keypos` elements
};

class DetsReader {
 public:
  // Extra validation of each object, run by open() as it validates the
  // file; an error from it fails open(). (RaMetaReader checks row shapes
  // here, so that a file is read twice, not three times.)
  using ObjectCheck = std::function<Status(const Object&)>;

  // Opens and validates `path` (see the contract above). Errors: not_found /
  // io from the file system; corrupt for damaged or non-DETS files;
  // unsupported_version for DETS formats other than 9; schema_mismatch for
  // tables that are not of type set; and whatever `check` returns.
  static Result<std::unique_ptr<DetsReader>> open(FileSystem& fs, const std::string& path,
                                                  const ObjectCheck& check = nullptr);

  const Info& info() const { return info_; }
  const Header& header() const { return header_; }

  // Calls fn for every object, in file order (not key order), exactly
  // info().object_count times. open() has already validated everything
  // this reads, so this fails only if the file changed since or the OS
  // fails a read. Stops at, and returns, the first error of fn. Callers
  // that keep results must still treat any error as "discard everything".
  Status for_each(const std::function<Status(const Object&)>& fn);

  DetsReader(const DetsReader&) = delete;
  DetsReader& operator=(const DetsReader&) = delete;
  ~DetsReader();

 private:
  // A part, segment or collection, as found through the hash table.
  struct Block {
    uint64_t position;
    uint32_t size;  // collection: its Size word; part/segment: 2048
    uint32_t slot;  // collection: its slot; part/segment: its index
    enum Kind : uint8_t { part, segment, collection } kind;
  };
  // Bytes the block occupies (a collection: its buddy block).
  static uint64_t extent(const Block& b);
  // "segment 3 (slots 768..1023)", "the collection of slot 17", ...
  static std::string describe(const Block& b);

  DetsReader() = default;
  Status validate_header(BytesView head);
  Status validate_trailer_and_free_lists();
  Status read_hash_table();
  Status check_free_blocks();
  Status scan(const ObjectCheck& check);

  std::unique_ptr<File> file_;
  Header header_;
  Info info_;
  // End of the area holding parts, segments and collections: the free
  // lists of a clean file, the end of a file not closed properly.
  uint64_t data_end_ = 0;
  std::vector<Block> blocks_;  // sorted by position once read
  // Free buddy blocks {position, size} from a clean file's free lists;
  // needed only while open() validates.
  std::vector<std::pair<uint64_t, uint64_t>> free_blocks_;
};

}  // namespace strata::raftmeta::dets
