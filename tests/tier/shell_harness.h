// Harness for the tier shells' tests: a node's shared machinery in
// miniature (io_context with two threads, BlockingPool, governor, manifest
// cache), an in-memory catalog and an object-store decorator that can make
// chosen requests throw, hang, fail or succeed — on top of a real store.
#pragma once

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "catalog/catalog.h"
#include "common/blocking_pool.h"
#include "common/clock.h"
#include "common/task.h"
#include "objstore/object_store.h"
#include "tier/governor.h"
#include "tier/manifest_cache.h"
#include "tier/uploader.h"

namespace strata::tier::test {

// In-memory catalog with the embedded backend's semantics (consecutive
// revisions), plus failure injection.
class FakeCatalog final : public catalog::Catalog {
 public:
  Result<catalog::StreamEntry> create(std::string_view stream, uint64_t epoch) override {
    std::lock_guard l(mu_);
    STRATA_TRY(injected("create"));
    if (entries_.count(std::string(stream))) {
      return Error(Errc::already_exists, "catalog: stream exists");
    }
    auto& e = entries_[std::string(stream)];
    e.stream = std::string(stream);
    e.epoch = epoch;
    e.revision = 1;
    return e;
  }
  Result<catalog::StreamEntry> get(std::string_view stream) override {
    std::lock_guard l(mu_);
    STRATA_TRY(injected("get"));
    auto it = entries_.find(std::string(stream));
    if (it == entries_.end()) return Error(Errc::not_found, "catalog: no stream");
    return it->second;
  }
  Result<std::vector<catalog::StreamEntry>> list() override {
    std::lock_guard l(mu_);
    std::vector<catalog::StreamEntry> out;
    for (auto& [k, v] : entries_) out.push_back(v);
    return out;
  }
  Result<catalog::PutResult> put(std::string_view stream, std::string_view root_key, uint64_t epoch,
                                 uint64_t expected_revision) override {
    std::unique_lock l(mu_);
    STRATA_TRY(injected("put"));
    puts += 1;
    auto it = entries_.find(std::string(stream));
    catalog::PutResult r;
    if (expected_revision == 0) {
      if (it != entries_.end()) {
        r.outcome = catalog::PutOutcome::conflict;
        r.revision = it->second.revision;
        r.epoch = it->second.epoch;
        return r;
      }
      auto& e = entries_[std::string(stream)];
      e = catalog::StreamEntry{std::string(stream), epoch, std::string(root_key), 1};
      r.revision = 1;
      r.epoch = epoch;
      return r;
    }
    if (it == entries_.end()) {
      r.outcome = catalog::PutOutcome::not_found;
      return r;
    }
    auto& e = it->second;
    r.revision = e.revision;
    r.epoch = e.epoch;
    if (e.epoch > epoch) {
      r.outcome = catalog::PutOutcome::fenced;
    } else if (e.revision != expected_revision) {
      r.outcome = catalog::PutOutcome::conflict;
    } else {
      e.root_key = std::string(root_key);
      e.epoch = epoch;
      e.revision += 1;
      r.revision = e.revision;
      r.epoch = e.epoch;
    }
    return r;
  }
  Result<catalog::PutResult> bump_epoch(std::string_view stream, uint64_t expected_revision,
                                        uint64_t min_epoch) override {
    std::lock_guard l(mu_);
    STRATA_TRY(injected("bump_epoch"));
    auto it = entries_.find(std::string(stream));
    catalog::PutResult r;
    if (it == entries_.end()) {
      r.outcome = catalog::PutOutcome::not_found;
      return r;
    }
    auto& e = it->second;
    if (e.revision != expected_revision) {
      r.outcome = catalog::PutOutcome::conflict;
      r.revision = e.revision;
      r.epoch = e.epoch;
      return r;
    }
    e.epoch = std::max(e.epoch + 1, min_epoch);
    e.revision += 1;
    r.revision = e.revision;
    r.epoch = e.epoch;
    return r;
  }
  Result<catalog::PutResult> remove(std::string_view stream, uint64_t expected_revision) override {
    std::lock_guard l(mu_);
    catalog::PutResult r;
    auto it = entries_.find(std::string(stream));
    if (it == entries_.end()) {
      r.outcome = catalog::PutOutcome::not_found;
      return r;
    }
    if (it->second.revision != expected_revision) {
      r.outcome = catalog::PutOutcome::conflict;
      r.revision = it->second.revision;
      return r;
    }
    entries_.erase(it);
    return r;
  }
  std::string describe() const override { return "fake"; }

  // The next n calls of `op` fail with a transient error.
  void fail_next(const std::string& op, int n) {
    std::lock_guard l(mu_);
    failures_[op] += n;
  }
  uint64_t puts = 0;

 private:
  Status injected(const std::string& op) {
    auto it = failures_.find(op);
    if (it != failures_.end() && it->second > 0) {
      it->second -= 1;
      return Error(Errc::transient, "catalog: injected failure of " + op);
    }
    return Status::OK();
  }
  std::mutex mu_;
  std::map<std::string, catalog::StreamEntry> entries_;
  std::map<std::string, int> failures_;
};

// What a FaultyStore does with a matching request.
enum class Fault { none, throw_exception, hang, fail_transient, fail_fatal };

// Forwards to a real store; put() of keys containing a substring can be made
// to throw, hang (until release()), or fail.
class FaultyStore final : public objstore::ObjectStore {
 public:
  explicit FaultyStore(std::shared_ptr<objstore::ObjectStore> inner) : inner_(std::move(inner)) {}
  ~FaultyStore() override { release(); }

  // The next `times` puts whose key contains `match` get `fault` (times < 0:
  // until cleared).
  void set(Fault fault, std::string match, int times) {
    std::lock_guard l(mu_);
    fault_ = fault;
    match_ = std::move(match);
    times_ = times;
  }
  void clear() { set(Fault::none, "", 0); }
  // The same for read_range, i.e. get_range (separately from puts).
  void set_range_fault(Fault fault, std::string match, int times) {
    std::lock_guard l(mu_);
    range_fault_ = fault;
    range_match_ = std::move(match);
    range_times_ = times;
  }
  // Lets hung requests go on (they then do their real work).
  void release() {
    std::lock_guard l(mu_);
    released_ = true;
    cv_.notify_all();
  }
  int hung() {
    std::lock_guard l(mu_);
    return hung_;
  }
  int faults_injected() {
    std::lock_guard l(mu_);
    return injected_;
  }
  // Blocks until `n` requests are hung, or the timeout passes.
  bool wait_hung(int n, std::chrono::milliseconds timeout) {
    std::unique_lock l(mu_);
    return cv_.wait_for(l, timeout, [&] { return hung_ >= n; });
  }

  objstore::ObjectResult<objstore::PutResult> put(std::string_view key, objstore::BodyParts body,
                                                  const objstore::PutOptions& opts) override {
    if (auto e = inject(take(key), objstore::Op::put, key)) return *e;
    return inner_->put(key, body, opts);
  }
  objstore::ObjectResult<uint64_t> read_range(std::string_view key, uint64_t offset,
                                              std::span<uint8_t> dst) override {
    if (auto e = inject(take_range(key), objstore::Op::get_range, key)) return *e;
    return inner_->read_range(key, offset, dst);
  }
  objstore::ObjectResult<uint64_t> get_to(std::string_view key, const objstore::GetSink& sink,
                                          const objstore::GetLimits& limits) override {
    return inner_->get_to(key, sink, limits);
  }
  uint64_t max_get_bytes() const override { return inner_->max_get_bytes(); }
  objstore::ObjectResult<objstore::ObjectInfo> head(std::string_view key) override {
    return inner_->head(key);
  }
  objstore::ObjectStatus remove(std::string_view key) override { return inner_->remove(key); }
  std::vector<objstore::RemoveOutcome> remove_many(std::span<const std::string> keys) override {
    return inner_->remove_many(keys);
  }
  objstore::ObjectResult<objstore::ListPage> list(const objstore::ListRequest& req) override {
    return inner_->list(req);
  }
  objstore::ObjectStatus check_access() override { return inner_->check_access(); }
  std::string describe() const override { return "faulty(" + inner_->describe() + ")"; }

 private:
  // Carries out `f` for a request: throws, hangs until release(), or gives
  // the error the request answers; nothing for Fault::none.
  std::optional<objstore::ObjectError> inject(Fault f, objstore::Op op, std::string_view key) {
    switch (f) {
      case Fault::throw_exception:
        throw std::runtime_error("injected exception in " + std::string(objstore::op_name(op)) +
                                 " of " + std::string(key));
      case Fault::hang: {
        std::unique_lock l(mu_);
        hung_ += 1;
        cv_.notify_all();
        cv_.wait(l, [&] { return released_; });
        return std::nullopt;
      }
      case Fault::fail_transient:
        return objstore::ObjectError{op,         std::string(key), 503,
                                     "SlowDown", "injected",       objstore::RetryClass::transient};
      case Fault::fail_fatal:
        return objstore::ObjectError{op,         std::string(key),           403, "AccessDenied",
                                     "injected", objstore::RetryClass::fatal};
      case Fault::none:
        break;
    }
    return std::nullopt;
  }
  Fault take(std::string_view key) {
    std::lock_guard l(mu_);
    if (fault_ == Fault::none || times_ == 0) return Fault::none;
    if (key.find(match_) == std::string_view::npos) return Fault::none;
    if (times_ > 0) times_ -= 1;
    injected_ += 1;
    return fault_;
  }
  Fault take_range(std::string_view key) {
    std::lock_guard l(mu_);
    if (range_fault_ == Fault::none || range_times_ == 0) return Fault::none;
    if (key.find(range_match_) == std::string_view::npos) return Fault::none;
    if (range_times_ > 0) range_times_ -= 1;
    injected_ += 1;
    return range_fault_;
  }
  std::shared_ptr<objstore::ObjectStore> inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  Fault fault_ = Fault::none;
  std::string match_;
  int times_ = 0;
  Fault range_fault_ = Fault::none;
  std::string range_match_;
  int range_times_ = 0;
  int injected_ = 0;
  int hung_ = 0;
  bool released_ = false;
};

// The node's shared machinery, in miniature.
struct ShellEnv {
  explicit ShellEnv(std::shared_ptr<objstore::ObjectStore> s, GovernorConfig g = {},
                    BlockingPoolOptions p = {})
      : pool(p),
        lifetime(std::make_shared<IoLifetime>()),
        guard(asio::make_work_guard(io)),
        store(std::move(s)),
        catalog(std::make_shared<FakeCatalog>()),
        cache(std::make_shared<ManifestCache>()) {
    governor = Governor::make(io, g, system_clock());
    for (int i = 0; i < 2; ++i) threads.emplace_back([this] { io.run(); });
  }
  ~ShellEnv() { shutdown(); }
  void shutdown() {
    if (threads.empty()) return;
    pool.stop();
    lifetime->end();
    guard.reset();
    io.stop();
    for (auto& t : threads) t.join();
    threads.clear();
  }
  UploaderEnv env() {
    UploaderEnv e;
    e.io = std::shared_ptr<asio::io_context>(&io, [](asio::io_context*) {});
    e.tasks = TaskContext{&pool, lifetime};
    e.governor = governor;
    e.store = store;
    e.catalog = catalog;
    e.cache = cache;
    e.clock = &system_clock();
    return e;
  }

  asio::io_context io;
  BlockingPool pool;
  std::shared_ptr<IoLifetime> lifetime;
  asio::executor_work_guard<asio::io_context::executor_type> guard;
  std::shared_ptr<objstore::ObjectStore> store;
  std::shared_ptr<FakeCatalog> catalog;
  std::shared_ptr<ManifestCache> cache;
  std::shared_ptr<Governor> governor;
  std::vector<std::thread> threads;
};

// Polls `pred` every 5 ms until it holds or `timeout` passes (for state that
// moves on other threads without a notification the test can wait on).
inline bool eventually(const std::function<bool()>& pred,
                       std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

}  // namespace strata::tier::test
