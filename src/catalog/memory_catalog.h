// MemoryCatalog: the catalog in memory, for tests of the layers above it
// (the uploader's persist path, the node). Same rules as every backend
// (entry_rules.h), nothing durable, plus fault injection:
//  - fail_next(n, error): the next n matching calls return `error` and
//    change nothing (a transient backend failure);
//  - hold(): matching calls block on entry until release(); the test learns
//    that a call is blocked through wait_held() (a handshake, no sleeps).
//    Released calls then run normally (after any fail_next still pending).
// A call is "matching" when it is of the given CatalogCall, or any call if
// none is given. Held calls are released by the destructor too, which then
// waits for every call in progress to return.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

#include "catalog/catalog.h"
#include "catalog/catalog_limits.h"
#include "catalog/entry_rules.h"

namespace strata::catalog {

enum class CatalogCall : uint8_t { create, get, list, put, bump_epoch, remove };
inline constexpr size_t kCatalogCalls = 6;

struct MemoryCatalogOptions {
  // Longest root key stored (as a backend with a bound would refuse longer
  // ones); the embedded backend's bound by default.
  size_t max_root_key_bytes = kMaxRootKeyBytes;
};

class MemoryCatalog final : public Catalog {
 public:
  explicit MemoryCatalog(MemoryCatalogOptions options = {});
  ~MemoryCatalog() override;
  MemoryCatalog(const MemoryCatalog&) = delete;
  MemoryCatalog& operator=(const MemoryCatalog&) = delete;

  Result<StreamEntry> create(std::string_view stream, uint64_t epoch) override;
  Result<StreamEntry> get(std::string_view stream) override;
  Result<std::vector<StreamEntry>> list() override;
  Result<PutResult> put(std::string_view stream, std::string_view root_key, uint64_t epoch,
                        uint64_t expected_revision) override;
  Result<PutResult> bump_epoch(std::string_view stream, uint64_t expected_revision,
                               uint64_t min_epoch) override;
  Result<PutResult> remove(std::string_view stream, uint64_t expected_revision) override;
  std::string describe() const override { return "memory"; }

  // ---- fault injection ----
  // The next `calls` matching calls fail with `error`, without effect.
  // Replaces any earlier fail_next.
  void fail_next(uint64_t calls, Error error = Error(Errc::unavailable, "injected failure"),
                 std::optional<CatalogCall> only = std::nullopt);
  // Matching calls from now on block before doing anything, until release().
  void hold(std::optional<CatalogCall> only = std::nullopt);
  // Lets every held call go on and stops holding new ones.
  void release();
  // Waits until at least `calls` calls are blocked by hold(); false if that
  // does not happen within `timeout`.
  bool wait_held(size_t calls, std::chrono::milliseconds timeout);
  // Calls of a kind that passed the argument checks so far (including
  // failed and held ones).
  uint64_t calls(CatalogCall c) const;

 private:
  class InProgress;

  // Counts the call, blocks while it is held, and returns the injected
  // failure if one is due. Called with mu_ held (through `lock`).
  Status enter(CatalogCall c, std::unique_lock<std::mutex>& lock);
  std::optional<StreamEntry> find(std::string_view stream) const;
  Status check_root_key(std::string_view stream, std::string_view root_key) const;
  void apply(const Decision& d);

  const MemoryCatalogOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, StreamEntry, std::less<>> entries_;
  uint64_t revision_floor_ = 0;

  uint64_t calls_[kCatalogCalls] = {};
  uint64_t fail_left_ = 0;
  Error fail_error_;
  std::optional<CatalogCall> fail_only_;
  bool holding_ = false;
  std::optional<CatalogCall> hold_only_;
  uint64_t release_gen_ = 0;  // bumped by release(): a held call waits for a change
  size_t held_ = 0;
  size_t in_progress_ = 0;
  bool closing_ = false;
};

}  // namespace strata::catalog
