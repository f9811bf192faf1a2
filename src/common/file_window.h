// FileWindow: reads a file through one in-memory window, so that a walk in
// file order over small items (chunks, WAL entries, DETS objects) costs one
// read per window rather than one per item. The log's segment scan and
// Reader, slotstore's WAL reader and the DETS reader all read through it.
//
// The window never reads at or past its limit (a segment's committed end, a
// WAL half's end, a file's size), so a reader never sees bytes it must not
// trust. When a wanted range starts inside the window but runs past it, the
// bytes already held move to the front instead of being read again (a chunk
// cut by the previous read costs only its missing part).
//
// Views returned by read() and read_up_to() stay valid until the next call
// that reads, reset()s or release()s the window. One thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "common/fs.h"

namespace strata {

class FileWindow {
 public:
  // `block`: bytes read ahead per file read (a read is never smaller than
  // what the call asks for, nor larger than what is left below the limit).
  // Without a file, reads fail until reset() names one.
  explicit FileWindow(size_t block) : block_(block) {}
  FileWindow(File& file, uint64_t limit, size_t block)
      : file_(&file), limit_(limit), block_(block) {}
  FileWindow(const FileWindow&) = delete;
  FileWindow& operator=(const FileWindow&) = delete;

  // Reads `file` from now on, below `limit`. Forgets what the window held
  // (keeps its memory).
  void reset(File& file, uint64_t limit) {
    file_ = &file;
    limit_ = limit;
    len_ = 0;
    start_ = 0;
  }
  // Moves the limit (a segment's committed end grew). What the window holds
  // stays valid: the file below the old limit does not change.
  void set_limit(uint64_t limit) { limit_ = limit; }
  uint64_t limit() const { return limit_; }

  // Exactly the bytes [pos, pos + n). Errors: out_of_range if the range
  // crosses the limit; corrupt (naming file and position) if the file is
  // shorter than the range; the file's own read errors.
  Result<BytesView> read(uint64_t pos, size_t n) {
    if (holds(pos, n)) return BytesView(buf_.get() + (pos - start_), n);
    return fill(pos, n, true);
  }
  // Up to n bytes at pos: fewer only at the limit or the end of the file
  // (an empty view at or past either).
  Result<BytesView> read_up_to(uint64_t pos, size_t n);

  // Frees the buffer (an idle reader holds no memory).
  void release();
  // Bytes read from the file so far (each byte of a sequential walk about once).
  uint64_t bytes_read() const { return bytes_read_; }
  // Bytes of memory the window holds now.
  size_t capacity() const { return cap_; }

 private:
  bool holds(uint64_t pos, size_t n) const {
    return pos >= start_ && pos - start_ <= len_ && n <= len_ - size_t(pos - start_);
  }
  Result<BytesView> fill(uint64_t pos, size_t n, bool exact);

  File* file_ = nullptr;
  uint64_t limit_ = 0;
  size_t block_;
  // File bytes [start_, start_ + len_) in buf_ (capacity cap_; not zero-filled).
  std::unique_ptr<char[]> buf_;
  size_t cap_ = 0;
  size_t len_ = 0;
  uint64_t start_ = 0;
  uint64_t bytes_read_ = 0;
};

}  // namespace strata
