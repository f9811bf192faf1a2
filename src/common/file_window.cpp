#include "common/file_window.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace strata {

Result<BytesView> FileWindow::read_up_to(uint64_t pos, size_t n) {
  n = size_t(std::min<uint64_t>(n, pos < limit_ ? limit_ - pos : 0));
  if (n == 0) return BytesView();
  if (holds(pos, n)) return BytesView(buf_.get() + (pos - start_), n);
  return fill(pos, n, false);
}

Result<BytesView> FileWindow::fill(uint64_t pos, size_t n, bool exact) {
  if (file_ == nullptr) return Error(Errc::internal, "file window: read before a file was set");
  if (pos > limit_ || n > limit_ - pos) {
    return Error(Errc::out_of_range, fmt::format("{}: {} bytes at position {} cross the read "
                                                 "limit {}",
                                                 file_->path(), n, pos, limit_));
  }
  if (n == 0) return BytesView();
  const size_t want = size_t(std::min<uint64_t>(std::max<uint64_t>(n, block_), limit_ - pos));
  // Bytes of the wanted range the window already holds move to the front.
  size_t keep = 0;
  if (pos >= start_ && pos - start_ < len_) keep = len_ - size_t(pos - start_);
  if (want > cap_) {
    std::unique_ptr<char[]> bigger(new char[want]);
    if (keep) std::memcpy(bigger.get(), buf_.get() + (pos - start_), keep);
    buf_ = std::move(bigger);
    cap_ = want;
  } else if (keep) {
    std::memmove(buf_.get(), buf_.get() + (pos - start_), keep);
  }
  start_ = pos;
  len_ = keep;
  STRATA_ASSIGN_OR_RETURN(size_t got, file_->read_at(pos + keep, buf_.get() + keep, want - keep));
  len_ += got;
  bytes_read_ += got;
  if (len_ < n) {
    if (!exact) return BytesView(buf_.get(), len_);
    return Error(Errc::corrupt, fmt::format("{}: short read at position {} ({} of {} bytes)",
                                            file_->path(), pos, len_, n));
  }
  return BytesView(buf_.get(), n);
}

void FileWindow::release() {
  buf_.reset();
  cap_ = len_ = 0;
  start_ = 0;
}

}  // namespace strata
