// MappedRange: a read-only memory map of bytes [offset, offset + length) of
// a file, so large file ranges (segment spans of a fragment upload, a file
// given to `strata objstore put`) reach a socket or a checksum without a
// copy through a heap buffer. The pages stay in the page cache; the map
// keeps the file's inode alive even if the file is deleted meanwhile. The
// range must not be truncated away while mapped (reading it would fault):
// strata maps only committed log bytes and files it does not modify.
#pragma once

#include <cstdint>
#include <string>

#include "common/bytes.h"
#include "common/result.h"

namespace strata {

class MappedRange {
 public:
  // Maps [offset, offset + length) of `path`. length 0 maps nothing. Errors
  // name the file and range; a file shorter than offset + length is corrupt.
  static Result<MappedRange> map(const std::string& path, uint64_t offset, uint64_t length);

  MappedRange() = default;
  MappedRange(MappedRange&& o) noexcept;
  MappedRange& operator=(MappedRange&& o) noexcept;
  ~MappedRange();

  BytesView view() const { return BytesView(data_, len_); }

  // Drops the process's pages of the range's first n bytes (the whole pages
  // among them) from its resident set: the next read of them faults them
  // back from the page cache, so the view stays valid. A caller reading a
  // large range front to back (a fragment upload) calls it behind itself
  // so that the map never holds the whole range in its RSS.
  void drop_before(uint64_t n);

 private:
  void* base_ = nullptr;  // what mmap returned (page aligned)
  size_t base_len_ = 0;
  const char* data_ = nullptr;
  size_t len_ = 0;
};

}  // namespace strata
