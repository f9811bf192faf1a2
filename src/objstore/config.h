// Object store configuration: the "objstore" section of strata's JSON config
// file, the standard AWS_* environment variables, and overrides (CLI flags),
// validated into one ObjectStoreConfig. The daemon and `strata objstore`
// use the same loader. Precedence, highest first:
//   overrides (flags)  >  config file  >  environment  >  defaults.
// Every validation error names the offending key (as a JSON path such as
// "objstore.s3.max_connections", or the environment variable) and value.
// Every setting is documented in docs/CONFIGURATION.md, "Object store".
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/fs.h"
#include "common/json_config.h"
#include "common/result.h"
#include "objstore/object_store.h"

namespace strata::objstore {

enum class Addressing {
  path,            // http://host/bucket/key
  virtual_hosted,  // http://bucket.host/key
};

struct S3Config {
  // scheme://host[:port], no path. Empty: https://s3.<region>.amazonaws.com.
  std::string endpoint;
  std::string region = "us-east-1";
  std::string bucket;
  Addressing addressing = Addressing::path;
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // optional (temporary credentials)
  // Per-request deadlines: TCP connect; whole request; and a stall deadline
  // (no byte moved for this long), which ends a hung transfer early.
  int connect_timeout_ms = 5'000;
  int request_timeout_ms = 120'000;
  int stall_timeout_ms = 15'000;
  // Requests in flight at most (one pooled connection each); more callers
  // wait for a slot, at most request_timeout_ms.
  int max_connections = 16;
  bool tls_verify = true;
  // PEM bundle of the CAs the endpoint's certificate is checked against
  // ("": the system's).
  std::string ca_file;

  // The endpoint actually used (default filled in), without trailing '/'.
  std::string effective_endpoint() const;
};

struct FsConfig {
  std::string root;
  bool create = true;  // create the root directory if missing
};

// Bounds of objstore.max_get_bytes: at least a page, at most 1 TiB.
constexpr uint64_t kMinMaxGetBytes = 4096;
constexpr uint64_t kMaxMaxGetBytes = 1ull << 40;

struct ObjectStoreConfig {
  enum class Backend { fs, s3 };
  Backend backend = Backend::fs;
  // The cap of ObjectStore::get(): a whole-object read larger than this
  // fails (fatal) before or while reading, never exhausting memory.
  uint64_t max_get_bytes = kDefaultMaxGetBytes;
  FsConfig fs;
  S3Config s3;
};

// Looks up an environment variable (injectable for tests).
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup process_env();

// One override: a key path inside the "objstore" section ("backend",
// "s3.bucket", "fs.root", ...) and its value as text; `origin` names it in
// errors (e.g. "--bucket").
struct ConfigOverride {
  std::string path;
  std::string value;
  std::string origin;
};

// Builds the configuration from the parsed config document (its "objstore"
// member; the document may be null or lack it), the environment and the
// overrides, and validates it.
Result<ObjectStoreConfig> load_config(const nlohmann::json& document, const EnvLookup& env,
                                      const std::vector<ConfigOverride>& overrides = {});

// Every setting path of the file's "objstore" section the loader accepts
// ("objstore.s3.bucket", ...; with "objstore.fs" and "objstore.s3", the
// objects holding them): the table the loader reads the section by.
SettingsRead config_settings();

// Reads and parses a JSON config file, then load_config. An empty path means
// "no file".
Result<ObjectStoreConfig> load_config_file(const std::string& path, const EnvLookup& env,
                                           const std::vector<ConfigOverride>& overrides = {});

// The configuration as JSON (secrets replaced by "***"), for `check` output.
nlohmann::json describe_config(const ObjectStoreConfig& c);

// Opens the configured backend. The fs backend uses `fs` (posix_fs() in
// production, FaultFileSystem in crash tests).
Result<std::unique_ptr<ObjectStore>> open_object_store(const ObjectStoreConfig& c,
                                                       FileSystem& fs = posix_fs());

}  // namespace strata::objstore
