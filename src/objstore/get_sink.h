// Streaming reads: where ObjectStore::get_to delivers a whole object (a
// sink of pieces) and the hard cap on how much it may deliver, plus the
// errors every backend reports for them, so both backends word them alike.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "common/bytes.h"
#include "common/result.h"
#include "objstore/object_error.h"

namespace strata::objstore {

// The default cap on one whole-object read (objstore.max_get_bytes).
constexpr uint64_t kDefaultMaxGetBytes = 1ull << 30;

// Receives an object's body as it arrives. The bytes are unverified until
// get_to returns success: a checksum mismatch is only known at the end.
struct GetSink {
  // Optional. Called at most once, before the first piece, with the body's
  // size when the store knows it up front (Content-Length, file size) and
  // it is within the cap: a hint to reserve room. A failure stops the read.
  std::function<Status(uint64_t size)> on_size;
  // Each piece of the body, in order; the view is valid during the call
  // only. A failure stops the transfer at once and get_to reports it.
  std::function<Status(BytesView piece)> on_piece;
};

struct GetLimits {
  // Hard cap on the body: a read fails before reading when the announced
  // size exceeds it, and as soon as more than this arrives.
  uint64_t max_bytes = kDefaultMaxGetBytes;
};

// "object of 5000 bytes exceeds the cap of 4096 bytes (max_get_bytes)"
// (size unknown: more than the cap arrived). Fatal: the object will not
// shrink on a retry.
ObjectError over_cap_error(Op op, std::string_view key, uint64_t cap,
                           std::optional<uint64_t> announced);

// The sink's own failure after `delivered` bytes; its class follows the
// sink's error code (objstore/retry_class.h, classify_errc).
ObjectError sink_error(Op op, std::string_view key, uint64_t delivered, const Error& e);

// Reserves room for a body of `n` bytes in `out`, advising transparent huge
// pages for large bodies (fresh memory is faulted in page by page as it is
// filled; huge pages cut those faults 512-fold where THP is in madvise mode).
void reserve_body(Bytes* out, uint64_t n);

}  // namespace strata::objstore
