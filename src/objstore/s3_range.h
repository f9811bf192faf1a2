// How the S3 backend judges the answer to a ranged GET from its status and
// headers, before reading a byte of its body (a pure function; the
// transfer in s3_store.cpp aborts at once on a refusal). The window is
// [offset, offset + window): the caller's buffer.
//
//  - 206 with a Content-Range from `offset` to the window's end, or to the
//    object's last byte when the object ends inside the window: accepted;
//    its Content-Length (if sent) must equal the Content-Range's span.
//  - 206 starting after `offset`, or ending before the window or object
//    ends: the answer does not cover what was asked (transient, like other
//    garbled answers). A Content-Length that contradicts the Content-Range:
//    transient too.
//  - 206 starting before `offset` or running past the window: the server
//    sends more than asked (fatal: it does not honour the Range header, and
//    a retry will not change that). One exception: s3rver 3.7.1 (the test
//    server, tools/package.json) reads a range end of 0 as "no end" and
//    answers bytes=0-0 with the whole object from byte 0; for that request
//    the first byte is taken and the transfer cut right after it.
//  - 200 (the server ignored Range and sends the whole object): accepted
//    only when that is exactly the window (offset 0, the whole object fits
//    the buffer); fatal otherwise, as is a 200 without a Content-Length.
//    An offset at or past the size it announces is fatal, as a 416 is.
//  - any other 2xx: transient.
#pragma once

#include <cstdint>
#include <string>
#include <variant>

#include "objstore/object_error.h"

namespace strata::objstore {

// Read the body: `expected` bytes of it go into the buffer from its start.
struct RangePlan {
  uint64_t expected = 0;
  // The body runs past the window (the bytes=0-0 exception): stop reading
  // after `expected` bytes.
  bool cut_after = false;
};

// Do not read the body: the answer is refused.
struct RangeRefusal {
  RetryClass retry = RetryClass::fatal;
  std::string message;
};

// `content_range` and `content_length` are the headers' values (nullptr
// when absent). window > 0 and offset + window must not overflow.
std::variant<RangePlan, RangeRefusal> judge_range_answer(int status,
                                                         const std::string* content_range,
                                                         const std::string* content_length,
                                                         uint64_t offset, uint64_t window);

}  // namespace strata::objstore
