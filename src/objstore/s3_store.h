// The `s3` backend: S3 (and S3-compatible servers) over libcurl.
//
//  - Signing: libcurl's CURLOPT_AWS_SIGV4. Paths and queries are built
//    canonical (uri.h) because libcurl 7.88 signs them as given.
//    x-amz-content-sha256 is UNSIGNED-PAYLOAD for object bodies (their
//    CRC32C travels in x-amz-checksum-crc32c, which S3 verifies) and the
//    real SHA-256 for XML bodies and empty bodies.
//  - Integrity: put() sends x-amz-checksum-crc32c (S3 rejects a mismatch
//    with BadDigest, classified fatal) and stores the CRC as user metadata
//    x-amz-meta-crc32c (8 hex digits), which get() verifies on the whole
//    body — on any S3-compatible server, including ones that ignore the
//    checksum header.
//  - Whole GET (get_to): the body streams into the caller's sink as libcurl
//    delivers it, with the CRC32C computed on the way; a Content-Length
//    above the cap is refused before the body, and the transfer is aborted
//    as soon as more than the cap arrives.
//  - Ranged GET (read_range): "Range: bytes=a-b"; the answer's status and
//    headers are judged before its body (s3_range.h) and the body is copied
//    from libcurl's buffer straight into the caller's. A server that sends
//    more than asked fails fatal without its body being read.
//  - Connections: a pool of max_connections libcurl handles (net/curl_pool.h);
//    each request takes one, so that is the bound on requests in flight.
//  - Deadlines: connect, total and stall deadlines on every request; a hung
//    server ends in a transient timeout error, never a hang.
#pragma once

#include <memory>
#include <string>

#include "objstore/config.h"
#include "net/curl_pool.h"
#include "objstore/object_store.h"
#include "objstore/s3_http.h"

namespace strata::objstore {

class S3ObjectStore final : public ObjectStore {
 public:
  // Validates the configuration (endpoint form, bucket, credentials).
  // max_get_bytes: the cap of get() (objstore.max_get_bytes).
  static Result<std::unique_ptr<S3ObjectStore>> open(const S3Config& config,
                                                     uint64_t max_get_bytes = kDefaultMaxGetBytes);

  using ObjectStore::put;
  ObjectResult<PutResult> put(std::string_view key, BodyParts body,
                              const PutOptions& opts) override;
  ObjectResult<uint64_t> read_range(std::string_view key, uint64_t offset,
                                    std::span<uint8_t> dst) override;
  ObjectResult<uint64_t> get_to(std::string_view key, const GetSink& sink,
                                const GetLimits& limits) override;
  uint64_t max_get_bytes() const override { return max_get_bytes_; }
  ObjectResult<ObjectInfo> head(std::string_view key) override;
  ObjectStatus remove(std::string_view key) override;
  std::vector<RemoveOutcome> remove_many(std::span<const std::string> keys) override;
  ObjectResult<ListPage> list(const ListRequest& req) override;
  ObjectStatus check_access() override;
  std::string describe() const override;

  // Requests currently holding a pooled connection (for tests and metrics).
  int in_flight() const { return pool_.in_flight(); }

  // The URL of an object or of the bucket (key empty), query appended.
  std::string url_for(std::string_view key, const std::string& canonical_query = "") const;

 private:
  S3ObjectStore(const S3Config& c, std::string base_url, uint64_t max_get_bytes);

  // Runs one request on a pooled handle; fails only when no handle frees
  // up in time.
  ObjectResult<HttpResponse> exchange(Op op, std::string_view key, const HttpRequest& req);
  // exchange(), and a transport failure or an HTTP status outside
  // `ok_statuses` becomes an ObjectError for (op, key).
  ObjectResult<HttpResponse> run(Op op, std::string_view key, const HttpRequest& req,
                                 std::initializer_list<int> ok_statuses);
  ObjectResult<std::vector<RemoveOutcome>> remove_batch(std::span<const std::string> keys);

  const S3Config config_;
  const HttpSettings settings_;
  const std::string base_url_;     // scheme://host[:port] (with bucket. for virtual-hosted)
  const std::string bucket_path_;  // "/bucket" for path-style, "" for virtual-hosted
  const uint64_t max_get_bytes_;
  net::CurlPool pool_;
};

}  // namespace strata::objstore
