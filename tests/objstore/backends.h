// Backends under test, for the typed contract suite and other suites:
// each opens a fresh, empty ObjectStore — a directory for `fs`, a real
// s3rver process on 127.0.0.1 for `s3`.
#pragma once

#include <memory>
#include <string>

#include "common/random.h"
#include "objstore/config.h"
#include "objstore/fs_store.h"
#include "objstore/s3_store.h"
#include "support/s3rver.h"
#include "support/temp_dir.h"

namespace strata::objstore::testing {

constexpr const char* kBucket = "strata-test";

// S3 settings for a local server: short deadlines so a fault never stalls a
// test for long.
inline S3Config local_s3_config(const std::string& endpoint) {
  S3Config c;
  c.endpoint = endpoint;
  c.region = "us-east-1";
  c.bucket = kBucket;
  c.addressing = Addressing::path;
  c.access_key_id = test::S3rver::kAccessKey;
  c.secret_access_key = test::S3rver::kSecretKey;
  c.connect_timeout_ms = 2000;
  c.request_timeout_ms = 20000;
  c.stall_timeout_ms = 5000;
  c.max_connections = 8;
  return c;
}

struct FsBackend {
  static constexpr const char* kName = "fs";
  static constexpr bool kBatches = false;  // remove_many is per key
  // Opens the store in `dir`; again with the same `dir`: a second store over
  // the same objects (e.g. with another max_get_bytes).
  std::unique_ptr<ObjectStore> open(test::TempDir& dir, std::string* error,
                                    uint64_t max_get_bytes = kDefaultMaxGetBytes) {
    auto s = FsObjectStore::open(posix_fs(), dir.sub("objects"), true, max_get_bytes);
    if (!s.ok()) {
      *error = s.error().to_string();
      return nullptr;
    }
    return std::move(s).value();
  }
};

struct S3Backend {
  static constexpr const char* kName = "s3";
  static constexpr bool kBatches = true;  // remove_many sends DeleteObjects batches
  std::unique_ptr<test::S3rver> server;
  // Starts s3rver in `dir` and opens a client; again: a second client of
  // the same server (e.g. with another max_get_bytes).
  std::unique_ptr<ObjectStore> open(test::TempDir& dir, std::string* error,
                                    uint64_t max_get_bytes = kDefaultMaxGetBytes) {
    if (!server) server = test::S3rver::start({dir.path(), {kBucket}}, error);
    if (!server) return nullptr;
    auto s = S3ObjectStore::open(local_s3_config(server->endpoint()), max_get_bytes);
    if (!s.ok()) {
      *error = s.error().to_string();
      return nullptr;
    }
    return std::move(s).value();
  }
};

// remove_many as a careful caller runs it: keys whose outcome is transient
// are retried (s3rver answers 500 InternalError when the parallel deletes of
// one batch race to clean up a directory they emptied); the final outcome of
// every key is returned.
inline std::vector<RemoveOutcome> remove_many_retrying(ObjectStore& store,
                                                       std::vector<std::string> keys) {
  std::vector<RemoveOutcome> final_out;
  for (int attempt = 0; attempt < 5 && !keys.empty(); ++attempt) {
    std::vector<std::string> again;
    for (auto& o : store.remove_many(keys)) {
      if (!o.ok() && o.error->retry == RetryClass::transient && attempt < 4) {
        again.push_back(o.key);
      } else {
        final_out.push_back(std::move(o));
      }
    }
    keys = std::move(again);
  }
  return final_out;
}

// Deterministic pseudo-random bytes.
inline std::string random_bytes(Random& rng, size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = char(rng.next() & 0xff);
  return s;
}

}  // namespace strata::objstore::testing
