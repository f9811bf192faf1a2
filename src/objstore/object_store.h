// ObjectStore: the blob store the remote tier writes through (docs/ARCHITECTURE.md,
// objstore/). Objects are immutable byte strings under string keys; callers
// never overwrite a key in place (every tier write uses a new key), though
// the stores allow it.
//
// Contract shared by every backend (and checked by one contract test suite,
// tests/objstore/contract_test.cpp, run against each):
//  - Keys follow docs/formats/objstore.md ("Keys"): 1..1024 bytes of valid UTF-8,
//    '/'-separated segments, no empty, "." or ".." segment, no control
//    characters. A bad key fails with RetryClass::fatal before any I/O.
//  - put() is all-or-nothing: a reader sees the old object (or none) or the
//    whole new one, never a prefix, also across a crash or a cut connection.
//    The body's CRC32C travels with it: the caller may give the CRC computed
//    at its source; the store checks the bytes against it before storing,
//    the server checks it again where it can (S3 x-amz-checksum-crc32c), and
//    get() verifies it on the way back when the object carries it.
//  - read_range(key, offset, dst) writes bytes [offset, min(offset +
//    dst.size(), size)) into dst and returns their count; offset >= size
//    fails fatal (HTTP 416 on S3); dst must not be empty. The body goes
//    straight into dst. A server that would send more than dst holds (it
//    ignored Range, or its Content-Range runs past the window) fails fatal
//    and the transfer is aborted at once (one s3rver quirk excepted, see
//    s3_range.h); a short or cut body is transient.
//    get_range(key, offset, length) is the same into a fresh Bytes.
//  - get_to(key, sink, limits) hands the whole object to the sink in pieces,
//    in order, and verifies its CRC32C (when the object carries one) as the
//    pieces pass; limits.max_bytes is a hard cap: an object announced larger
//    fails before its body is read, and the transfer stops as soon as more
//    arrives (fatal, naming key and cap). A sink failure stops the transfer
//    and is returned. get(key) is get_to into a Bytes, capped by the
//    store's max_get_bytes() (objstore.max_get_bytes).
//  - remove() is idempotent: removing a missing key succeeds (as on S3).
//  - list() returns keys with the prefix in ascending bytewise (UTF-8) order,
//    at most max_keys (1..1000) per page, and a continuation token while
//    more remain. Tokens are opaque; a page never repeats or skips a key
//    that existed for the whole listing.
//  - Errors carry op, key, HTTP status, S3 code and a retry class
//    (object_error.h); the store never retries on its own except libcurl's
//    transparent reconnect of a stale pooled connection.
//  - Thread-safe: any number of threads may call one instance; the S3
//    backend bounds requests in flight (extra callers wait for a slot).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/bytes.h"
#include "objstore/get_sink.h"
#include "objstore/object_error.h"

namespace strata::objstore {

// A body given as consecutive pieces (e.g. fragment header, chunk bytes read
// from segment files, index), sent or written without concatenating them.
using BodyParts = std::span<const BytesView>;

struct PutOptions {
  std::string content_type = "application/octet-stream";
  // CRC32C of the whole body as computed where the bytes came from. If set
  // and the body does not match, put fails (fatal, checksum mismatch) and
  // nothing is stored. If unset, the store computes it.
  std::optional<uint32_t> crc32c;
  // Called as a pass over the body (the store's checksum, its write or its
  // send; a resent request is a new pass) leaves bytes behind: the body's
  // first `done` bytes are not read again in this pass. A pass begins with
  // a report of 0 (and only a pass's beginning reports 0), then reports
  // rise every kBodyStepBytes or so up to the end of the pass. A caller
  // whose body is mapped from files drops the pages behind
  // (MappedRange::drop_before), so an upload keeps a window of a large body
  // resident, not all of it.
  std::function<void(uint64_t done)> on_progress;
};

// How far apart a store reports PutOptions::on_progress, and the pieces it
// checksums and writes a body in.
inline constexpr uint64_t kBodyStepBytes = 4ull << 20;

// Calls fn on the body front to back in pieces of at most kBodyStepBytes
// (a piece never spans two parts), and `progress` (if set) with 0 before the
// first and after each with the bytes done so far. Stops at fn's first
// error and returns it.
Status for_each_body_piece(BodyParts body, const std::function<Status(BytesView)>& fn,
                           const std::function<void(uint64_t)>& progress);

struct PutResult {
  std::string etag;  // as the store reports it, without quotes
  uint32_t crc32c = 0;
};

struct ObjectInfo {
  std::string key;
  uint64_t size = 0;
  std::string etag;  // without quotes
  // CRC32C of the body if the object carries it (objects put by strata do).
  std::optional<uint32_t> crc32c;
  // When the object was stored, ms since the Unix epoch, by the store's
  // clock (S3: LastModified / Last-Modified, whole seconds on AWS and
  // s3rver; fs: the file's mtime). Unset when the store does not say.
  std::optional<int64_t> last_modified_ms;
};

struct ListRequest {
  std::string prefix;
  std::string continuation_token;  // empty for the first page
  int max_keys = 1000;             // 1..1000
};

struct ListPage {
  std::vector<ObjectInfo> objects;  // ascending key order; crc32c unset
  std::string next_token;           // empty when this is the last page
};

// Outcome of one key of a remove_many batch.
struct RemoveOutcome {
  std::string key;
  std::optional<ObjectError> error;  // empty: removed (or was absent)
  bool ok() const { return !error.has_value(); }
};

// The largest batch one DeleteObjects request may carry (S3's limit).
constexpr size_t kMaxDeleteBatch = 1000;
constexpr int kMaxListKeys = 1000;

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  virtual ObjectResult<PutResult> put(std::string_view key, BodyParts body,
                                      const PutOptions& opts = {}) = 0;
  ObjectResult<PutResult> put(std::string_view key, BytesView body, const PutOptions& opts = {}) {
    return put(key, BodyParts(&body, 1), opts);
  }

  // Bytes [offset, min(offset + dst.size(), size)) into dst; returns how many
  // were written. See the contract above.
  virtual ObjectResult<uint64_t> read_range(std::string_view key, uint64_t offset,
                                            std::span<uint8_t> dst) = 0;
  // The whole object, piece by piece into `sink`, at most limits.max_bytes;
  // verifies its CRC32C when it carries one. Returns the object's size.
  virtual ObjectResult<uint64_t> get_to(std::string_view key, const GetSink& sink,
                                        const GetLimits& limits) = 0;
  // The cap get() applies (objstore.max_get_bytes).
  virtual uint64_t max_get_bytes() const = 0;

  // Not virtual: every read reaches a backend through read_range or get_to,
  // so wrappers (MeteredStore) see and count each read once.
  // The whole object (get_to into one buffer, capped by max_get_bytes()).
  ObjectResult<Bytes> get(std::string_view key);
  // Bytes [offset, min(offset + length, size)), read_range into a fresh
  // buffer of min(length, max_get_bytes() + 1) bytes (a window that would
  // hold more than the cap fails like get()); length must be > 0.
  ObjectResult<Bytes> get_range(std::string_view key, uint64_t offset, uint64_t length);

  virtual ObjectResult<ObjectInfo> head(std::string_view key) = 0;
  virtual ObjectStatus remove(std::string_view key) = 0;
  // Removes many keys (batches of <= kMaxDeleteBatch per request); returns
  // one outcome per input key, in input order. Never fails as a whole: a
  // failed batch gives each of its keys that batch's error.
  virtual std::vector<RemoveOutcome> remove_many(std::span<const std::string> keys) = 0;
  virtual ObjectResult<ListPage> list(const ListRequest& req) = 0;

  // Checks the store is reachable and its bucket (or root directory) exists
  // and is accessible with the configured credentials. No object is written.
  virtual ObjectStatus check_access() = 0;
  // "s3://bucket (http://host:port, path-style)", "fs:/var/lib/strata/objects"
  virtual std::string describe() const = 0;
};

// Lists every key under `prefix`, following continuation tokens. For tools
// and tests; bounded by `max_objects` (fails fatal when exceeded).
ObjectResult<std::vector<ObjectInfo>> list_all(ObjectStore& store, std::string_view prefix,
                                               size_t max_objects = 10'000'000);

}  // namespace strata::objstore
