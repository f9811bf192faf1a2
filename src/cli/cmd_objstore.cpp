// `strata objstore`: the object store from the command line, with the same
// configuration the daemon uses (objstore/config.h): a JSON config file
// (--config), the AWS_* environment, and flags that override both.
//   strata objstore ls [PREFIX]            list keys (all pages)
//   strata objstore get KEY [-o FILE]      fetch an object (or --offset/--length)
//   strata objstore put KEY FILE|-         store a file (or stdin)
//   strata objstore rm KEY... | --prefix P remove keys (batched)
//   strata objstore check                  credentials, bucket access, round trip
#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "cli/cmd_log_demo.h"
#include "cli/command.h"
#include "common/crc32c.h"
#include "common/mapped_range.h"
#include "common/random.h"
#include "objstore/config.h"
#include "objstore/object_store.h"

namespace strata::cli {
namespace {

using json = nlohmann::json;
using namespace strata::objstore;

struct Flags {
  std::string config;
  // Overrides, by config path; empty means "not given".
  // Numbers stay text so the loader validates them and names the flag.
  std::string backend, root, endpoint, bucket, region, addressing;
  std::string max_connections, connect_timeout_ms, request_timeout_ms;
};

Result<ObjectStoreConfig> load(const Flags& f) {
  std::vector<ConfigOverride> o;
  auto add = [&](const char* path, const std::string& v, const char* flag) {
    if (!v.empty()) o.push_back({path, v, flag});
  };
  add("backend", f.backend, "--backend");
  add("fs.root", f.root, "--root");
  add("s3.endpoint", f.endpoint, "--endpoint");
  add("s3.bucket", f.bucket, "--bucket");
  add("s3.region", f.region, "--region");
  add("s3.addressing", f.addressing, "--addressing");
  add("s3.max_connections", f.max_connections, "--max-connections");
  add("s3.connect_timeout_ms", f.connect_timeout_ms, "--connect-timeout-ms");
  add("s3.request_timeout_ms", f.request_timeout_ms, "--request-timeout-ms");
  return load_config_file(f.config, process_env(), o);
}

Result<std::unique_ptr<ObjectStore>> open(const Flags& f) {
  STRATA_ASSIGN_OR_RETURN(auto cfg, load(f));
  return open_object_store(cfg);
}

// The bytes to put: a file is mapped (no copy into fresh memory; the put
// reads the page cache, and drops the pages behind it), stdin is read into
// memory.
class Input {
 public:
  Status open(const std::string& path) {
    if (path == "-") {
      std::stringstream ss;
      ss << std::cin.rdbuf();
      owned_ = ss.str();
      view_ = owned_;
      return Status::OK();
    }
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      return Error(Errc::io, fmt::format("stat {}: {}", path, std::strerror(errno)));
    }
    if (!S_ISREG(st.st_mode)) return Error(Errc::invalid_argument, path + " is not a regular file");
    STRATA_ASSIGN_OR_RETURN(map_, MappedRange::map(path, 0, uint64_t(st.st_size)));
    view_ = map_.view();
    return Status::OK();
  }
  BytesView bytes() const { return view_; }
  // The put is done with the first n bytes (in this pass).
  void behind(uint64_t n) { map_.drop_before(n); }

 private:
  MappedRange map_;
  Bytes owned_;
  BytesView view_;
};

json error_json(const ObjectError& e) {
  return {{"op", std::string(op_name(e.op))},
          {"key", e.key},
          {"http_status", e.http_status},
          {"s3_code", e.s3_code},
          {"retry", std::string(retry_class_name(e.retry))},
          {"message", e.message}};
}

void run_ls(Context& ctx, const Flags& f, const std::string& prefix, int max) {
  auto store = open(f);
  if (!store.ok()) return ctx.fail(store.error());
  std::vector<ObjectInfo> all;
  ListRequest req{prefix, "", 1000};
  while (true) {
    auto page = (*store)->list(req);
    if (!page.ok()) return ctx.fail(page.error());
    for (auto& o : page->objects) {
      if (max > 0 && all.size() == size_t(max)) break;
      all.push_back(std::move(o));
    }
    if (page->next_token.empty() || (max > 0 && all.size() == size_t(max))) break;
    req.continuation_token = page->next_token;
  }
  if (ctx.json) {
    json objs = json::array();
    uint64_t total = 0;
    for (const auto& o : all) {
      objs.push_back({{"key", o.key}, {"size", o.size}, {"etag", o.etag}});
      total += o.size;
    }
    ctx.print_json({{"objects", objs}, {"count", all.size()}, {"bytes", total}});
  } else {
    for (const auto& o : all) std::cout << o.size << "\t" << o.key << "\n";
  }
}

// What `get` says once the object is in `out`.
void report_written(Context& ctx, const std::string& key, uint64_t bytes, const std::string& out) {
  if (ctx.json) {
    ctx.print_json({{"key", key}, {"bytes", bytes}, {"file", out}});
  } else {
    std::cout << "wrote " << bytes << " bytes of " << key << " to " << out << "\n";
  }
}

// A whole object into a file, streamed: it goes to OUT.part as it arrives
// (memory stays at the store's pieces, not the object's size; progress on
// stderr) and is renamed to OUT only once the store verified its CRC32C.
void get_to_file(Context& ctx, ObjectStore& store, const std::string& key, const std::string& out) {
  const std::string part = out + ".part";
  std::ofstream o(part, std::ios::binary | std::ios::trunc);
  if (!o) return ctx.fail(Error(Errc::io, "cannot write " + part));
  Progress progress(!ctx.json);
  uint64_t size = 0, got = 0;
  GetSink sink;
  sink.on_size = [&size](uint64_t n) {
    size = n;
    return Status::OK();
  };
  sink.on_piece = [&](BytesView piece) -> Status {
    o.write(piece.data(), std::streamsize(piece.size()));
    if (!o) return Error(Errc::io, "cannot write " + part);
    got += piece.size();
    progress.update(fmt::format("get {}: {} of {}", key, human_bytes(double(got)),
                                size ? human_bytes(double(size)) : std::string("?")));
    return Status::OK();
  };
  auto r = store.get_to(key, sink, GetLimits{store.max_get_bytes()});
  progress.done();
  o.close();
  if (!r.ok() || !o) {
    std::remove(part.c_str());
    if (!r.ok()) return ctx.fail(r.error());
    return ctx.fail(Error(Errc::io, "cannot write " + part));
  }
  if (std::rename(part.c_str(), out.c_str()) != 0) {
    std::remove(part.c_str());
    return ctx.fail(
        Error(Errc::io, fmt::format("rename {} to {}: {}", part, out, std::strerror(errno))));
  }
  report_written(ctx, key, *r, out);
}

void run_get(Context& ctx, const Flags& f, const std::string& key, const std::string& out,
             int64_t offset, int64_t length) {
  if (ctx.json && (out.empty() || out == "-")) {
    return ctx.fail("objstore get --json writes the object to a file: give -o FILE");
  }
  auto store = open(f);
  if (!store.ok()) return ctx.fail(store.error());
  if (offset < 0 && length < 0 && !out.empty() && out != "-") {
    return get_to_file(ctx, **store, key, out);
  }
  auto data = (offset >= 0 || length >= 0)
                  ? (*store)->get_range(key, uint64_t(std::max<int64_t>(offset, 0)),
                                        length >= 0 ? uint64_t(length) : UINT64_MAX)
                  : (*store)->get(key);
  if (!data.ok()) return ctx.fail(data.error());
  if (out.empty() || out == "-") {
    std::cout.write(data->data(), std::streamsize(data->size()));
    std::cout.flush();
    return;
  }
  std::ofstream o(out, std::ios::binary | std::ios::trunc);
  o.write(data->data(), std::streamsize(data->size()));
  o.close();
  if (!o) return ctx.fail(Error(Errc::io, "cannot write " + out));
  report_written(ctx, key, data->size(), out);
}

void run_put(Context& ctx, const Flags& f, const std::string& key, const std::string& in,
             const std::string& content_type) {
  Input input;
  if (auto st = input.open(in); !st.ok()) return ctx.fail(st.error());
  BytesView data = input.bytes();
  auto store = open(f);
  if (!store.ok()) return ctx.fail(store.error());
  PutOptions opts;
  if (!content_type.empty()) opts.content_type = content_type;
  // Each pass over the body (the checksum, then the write or send) shows.
  Progress progress(!ctx.json);
  int pass = 0;
  opts.on_progress = [&](uint64_t done) {
    if (done == 0) pass += 1;
    input.behind(done);
    progress.update(fmt::format("put {}: pass {}, {} of {}", key, pass, human_bytes(double(done)),
                                human_bytes(double(data.size()))));
  };
  auto r = (*store)->put(key, data, opts);
  progress.done();
  if (!r.ok()) return ctx.fail(r.error());
  if (ctx.json) {
    ctx.print_json({{"key", key},
                    {"bytes", data.size()},
                    {"etag", r->etag},
                    {"crc32c", fmt::format("{:08x}", r->crc32c)}});
  } else {
    std::cout << "stored " << key << " (" << human_bytes(double(data.size())) << ", etag "
              << r->etag << ")\n";
  }
}

void run_rm(Context& ctx, const Flags& f, std::vector<std::string> keys,
            const std::string& prefix) {
  if (keys.empty() == prefix.empty()) {
    return ctx.fail("objstore rm: give either keys or --prefix (not both, not neither)");
  }
  auto store = open(f);
  if (!store.ok()) return ctx.fail(store.error());
  if (!prefix.empty()) {
    auto all = list_all(**store, prefix);
    if (!all.ok()) return ctx.fail(all.error());
    for (auto& o : *all) keys.push_back(std::move(o.key));
  }
  auto out = (*store)->remove_many(keys);
  json removed = json::array(), failed = json::array();
  for (const auto& o : out) {
    if (o.ok()) {
      removed.push_back(o.key);
    } else {
      failed.push_back(error_json(*o.error));
    }
  }
  if (ctx.json) {
    ctx.print_json({{"removed", removed}, {"failed", failed}});
  } else {
    for (const auto& o : out) {
      if (o.ok()) std::cout << "removed " << o.key << "\n";
    }
  }
  if (!failed.empty()) {
    ctx.exit_code = 1;
    if (!ctx.json) {
      for (const auto& o : out)
        if (!o.ok()) std::cerr << "strata: " << o.error->to_string() << "\n";
    }
  }
}

// `check`: each step runs only if the previous ones passed; the first
// failure is named.
void run_check(Context& ctx, const Flags& f) {
  json steps = json::array();
  bool ok = true;
  std::string failed_step;
  auto step = [&](const std::string& name, const std::string& detail, const std::string& error) {
    json s = {{"step", name}, {"ok", error.empty()}};
    if (!detail.empty()) s["detail"] = detail;
    if (!error.empty()) {
      s["error"] = error;
      ok = false;
      failed_step = name;
    }
    steps.push_back(s);
    if (!ctx.json) {
      std::cout << (error.empty() ? "ok    " : "FAIL  ") << name;
      if (!detail.empty()) std::cout << ": " << detail;
      if (!error.empty()) std::cout << ": " << error;
      std::cout << "\n";
    }
    return error.empty();
  };
  auto finish = [&](const std::string& store_desc) {
    if (ctx.json) {
      json j = {{"ok", ok}, {"steps", steps}};
      if (!store_desc.empty()) j["store"] = store_desc;
      if (!ok) j["failed_step"] = failed_step;
      ctx.print_json(j);
    } else if (!ok) {
      std::cerr << "strata: objstore check failed at step '" << failed_step << "'\n";
    }
    if (!ok) ctx.exit_code = 1;
  };

  auto cfg = load(f);
  if (!cfg.ok()) {
    // Missing credentials are a configuration error to the loader, but the
    // operator asked which step failed.
    bool creds = cfg.error().message.find("credentials missing") != std::string::npos;
    if (creds) step("config", "", "");
    step(creds ? "credentials" : "config", "", cfg.error().message);
    return finish("");
  }
  step("config", f.config.empty() ? "" : f.config, "");
  std::string creds;
  if (cfg->backend == ObjectStoreConfig::Backend::s3) {
    creds = "access key " + cfg->s3.access_key_id +
            (cfg->s3.session_token.empty() ? "" : " with session token");
  } else {
    creds = "none needed (fs)";
  }
  step("credentials", creds, "");
  auto store = open_object_store(*cfg);
  if (!step("open", store.ok() ? (*store)->describe() : "",
            store.ok() ? "" : store.error().message))
    return finish("");
  const std::string desc = (*store)->describe();
  auto access = (*store)->check_access();
  if (!step("bucket access", "", access.ok() ? "" : access.error().to_string()))
    return finish(desc);

  Random rng(uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()));
  const std::string key = fmt::format("strata-check/{:016x}", rng.next());
  std::string payload(64 * 1024, '\0');
  for (auto& c : payload) c = char(rng.next());
  auto put = (*store)->put(key, payload);
  if (!step("put", key, put.ok() ? "" : put.error().to_string())) return finish(desc);
  auto got = (*store)->get(key);
  std::string get_err = !got.ok()         ? got.error().to_string()
                        : *got != payload ? "read back different bytes than written"
                                          : "";
  bool got_ok = step("get", "", get_err);
  auto removed = (*store)->remove(key);  // clean up even after a failed get
  if (!got_ok) return finish(desc);
  if (!step("delete", "", removed.ok() ? "" : removed.error().to_string())) return finish(desc);
  auto gone = (*store)->head(key);
  step("deleted object is gone", "",
       gone.ok()                               ? "object still visible after delete"
       : gone.retry() != RetryClass::not_found ? gone.error().to_string()
                                               : "");
  finish(desc);
}

Registrar reg_objstore([](CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("objstore", "Object store: ls, get, put, rm, check");
  cmd->require_subcommand(1);
  cmd->fallthrough();
  auto flags = std::make_shared<Flags>();
  cmd->add_option("--config", flags->config, "JSON config file (its \"objstore\" section)");
  cmd->add_option("--backend", flags->backend, "fs or s3");
  cmd->add_option("--root", flags->root, "fs: root directory");
  cmd->add_option("--endpoint", flags->endpoint, "s3: endpoint URL (http[s]://host[:port])");
  cmd->add_option("--bucket", flags->bucket, "s3: bucket");
  cmd->add_option("--region", flags->region, "s3: region");
  cmd->add_option("--addressing", flags->addressing, "s3: path or virtual");
  cmd->add_option("--max-connections", flags->max_connections, "s3: requests in flight at most");
  cmd->add_option("--connect-timeout-ms", flags->connect_timeout_ms, "s3: connect deadline");
  cmd->add_option("--request-timeout-ms", flags->request_timeout_ms, "s3: per-request deadline");

  auto* ls = cmd->add_subcommand("ls", "List keys under a prefix (every page)");
  auto prefix = std::make_shared<std::string>();
  auto max = std::make_shared<int>(0);
  ls->add_option("prefix", *prefix, "Key prefix");
  ls->add_option("--max", *max, "Stop after this many keys");
  ls->callback([&ctx, flags, prefix, max] { run_ls(ctx, *flags, *prefix, *max); });

  auto* get = cmd->add_subcommand("get", "Fetch an object (whole or a byte range)");
  auto gkey = std::make_shared<std::string>();
  auto gout = std::make_shared<std::string>();
  auto goff = std::make_shared<int64_t>(-1);
  auto glen = std::make_shared<int64_t>(-1);
  get->add_option("key", *gkey, "Object key")->required();
  get->add_option("-o,--output", *gout, "Write to FILE (default: stdout)");
  get->add_option("--offset", *goff, "Ranged get: first byte");
  get->add_option("--length", *glen, "Ranged get: byte count");
  get->callback(
      [&ctx, flags, gkey, gout, goff, glen] { run_get(ctx, *flags, *gkey, *gout, *goff, *glen); });

  auto* put = cmd->add_subcommand("put", "Store a file (or stdin) as an object");
  auto pkey = std::make_shared<std::string>();
  auto pin = std::make_shared<std::string>();
  auto ptype = std::make_shared<std::string>();
  put->add_option("key", *pkey, "Object key")->required();
  put->add_option("file", *pin, "File to store, or - for stdin")->required();
  put->add_option("--content-type", *ptype, "Content-Type (default application/octet-stream)");
  put->callback([&ctx, flags, pkey, pin, ptype] { run_put(ctx, *flags, *pkey, *pin, *ptype); });

  auto* rm = cmd->add_subcommand("rm", "Remove keys (batched), or every key under --prefix");
  auto rkeys = std::make_shared<std::vector<std::string>>();
  auto rprefix = std::make_shared<std::string>();
  rm->add_option("keys", *rkeys, "Keys to remove");
  rm->add_option("--prefix", *rprefix, "Remove every key under this prefix");
  rm->callback([&ctx, flags, rkeys, rprefix] { run_rm(ctx, *flags, *rkeys, *rprefix); });

  auto* check = cmd->add_subcommand(
      "check", "Verify config, credentials, bucket access and a put/get/delete round trip");
  check->callback([&ctx, flags] { run_check(ctx, *flags); });
});

}  // namespace
}  // namespace strata::cli
