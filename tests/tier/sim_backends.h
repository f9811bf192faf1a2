// The object store and catalog of a shell simulation (sim_executor.h): in
// memory, single-threaded (every job runs on the simulation's thread), with
// failures drawn from the simulation's seed.
//
//  SimFaults   whether and how a request fails: per-request chances, off
//              for the liveness phase.
//  SimStore    objects in a map; a PUT may fail transiently (503) or
//              fatally (403), throw, or be stored and still report a
//              transient failure (a reply lost after the write); reads and
//              deletes may fail transiently. Each delete is shown to a
//              checker first.
//  SimCatalog  a MemoryCatalog behind the same kind of faults: refused
//              before it acts, or applied and then reported failed (the
//              unknown outcome of a compare-and-set whose reply was lost).
//              Every change is shown to a checker.
//  CatalogView one uploader's door to the catalog, showing its take-overs
//              to a checker.
#pragma once

#include <fmt/format.h>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>

#include "catalog/memory_catalog.h"
#include "common/crc32c.h"
#include "common/random.h"
#include "objstore/object_store.h"

namespace strata::tier::test {

struct SimFaults {
  explicit SimFaults(Random& r) : rng(r) {}
  Random& rng;
  bool on = true;
  // Chances in thousandths, per request.
  uint32_t put_transient = 0, put_fatal = 0, put_lost_reply = 0, put_throw = 0;
  uint32_t read_transient = 0, remove_transient = 0;
  uint32_t catalog_before = 0, catalog_after = 0;
  uint64_t injected = 0;

  bool draw(uint32_t per_mille) {
    if (!on || per_mille == 0 || !rng.chance(per_mille, 1000)) return false;
    injected += 1;
    return true;
  }
};

class SimStore final : public objstore::ObjectStore {
 public:
  explicit SimStore(SimFaults& f) : faults_(f) {}

  // Called before a key is stored and before one is removed (a checker
  // records what it objects to; the request goes ahead).
  std::function<void(const std::string& key)> before_put;
  std::function<void(const std::string& key)> before_remove;

  const std::map<std::string, Bytes, std::less<>>& objects() const { return objects_; }
  uint64_t puts = 0, removes = 0;

  objstore::ObjectResult<objstore::PutResult> put(std::string_view key, objstore::BodyParts body,
                                                  const objstore::PutOptions& opts) override {
    using objstore::Op;
    if (faults_.draw(faults_.put_throw)) {
      throw std::runtime_error(fmt::format("injected exception in put of {}", key));
    }
    if (faults_.draw(faults_.put_transient)) return error(Op::put, key, 503, "SlowDown", true);
    if (faults_.draw(faults_.put_fatal)) return error(Op::put, key, 403, "AccessDenied", false);
    Bytes all;
    uint32_t crc = 0;
    Status s = objstore::for_each_body_piece(
        body,
        [&](BytesView piece) {
          all.append(piece);
          crc = crc32c::extend(crc, piece.data(), piece.size());
          return Status::OK();
        },
        opts.on_progress);
    if (!s.ok()) return error(Op::put, key, 0, "", false);
    if (opts.crc32c && *opts.crc32c != crc) {
      return error(Op::put, key, 400, "BadDigest", false);
    }
    if (before_put) before_put(std::string(key));
    objects_[std::string(key)] = std::move(all);
    puts += 1;
    if (faults_.draw(faults_.put_lost_reply)) return error(Op::put, key, 0, "", true);
    return objstore::PutResult{fmt::format("{:08x}", crc), crc};
  }
  objstore::ObjectResult<uint64_t> read_range(std::string_view key, uint64_t offset,
                                              std::span<uint8_t> dst) override {
    using objstore::Op;
    if (faults_.draw(faults_.read_transient)) return error(Op::get_range, key, 503, "", true);
    auto it = objects_.find(key);
    if (it == objects_.end()) return missing(Op::get_range, key);
    if (offset >= it->second.size()) return error(Op::get_range, key, 416, "InvalidRange", false);
    uint64_t n = std::min<uint64_t>(dst.size(), it->second.size() - offset);
    std::memcpy(dst.data(), it->second.data() + offset, n);
    return n;
  }
  objstore::ObjectResult<uint64_t> get_to(std::string_view key, const objstore::GetSink& sink,
                                          const objstore::GetLimits& limits) override {
    using objstore::Op;
    if (faults_.draw(faults_.read_transient)) return error(Op::get, key, 503, "", true);
    auto it = objects_.find(key);
    if (it == objects_.end()) return missing(Op::get, key);
    const Bytes& b = it->second;
    if (b.size() > limits.max_bytes) {
      return objstore::over_cap_error(Op::get, key, limits.max_bytes, b.size());
    }
    if (sink.on_size) {
      if (Status s = sink.on_size(b.size()); !s.ok()) {
        return objstore::sink_error(Op::get, key, 0, s.error());
      }
    }
    if (Status s = sink.on_piece(b); !s.ok()) {
      return objstore::sink_error(Op::get, key, 0, s.error());
    }
    return uint64_t(b.size());
  }
  uint64_t max_get_bytes() const override { return objstore::kDefaultMaxGetBytes; }
  objstore::ObjectResult<objstore::ObjectInfo> head(std::string_view key) override {
    using objstore::Op;
    if (faults_.draw(faults_.read_transient)) return error(Op::head, key, 503, "", true);
    auto it = objects_.find(key);
    if (it == objects_.end()) return missing(Op::head, key);
    objstore::ObjectInfo info;
    info.key = std::string(key);
    info.size = it->second.size();
    info.crc32c = crc32c::value(it->second.data(), it->second.size());
    return info;
  }
  objstore::ObjectStatus remove(std::string_view key) override {
    if (faults_.draw(faults_.remove_transient)) {
      return error(objstore::Op::remove, key, 503, "", true);
    }
    erase(key);
    return objstore::ObjectStatus::OK();
  }
  std::vector<objstore::RemoveOutcome> remove_many(std::span<const std::string> keys) override {
    std::vector<objstore::RemoveOutcome> out;
    for (const std::string& k : keys) {
      objstore::RemoveOutcome o{k, std::nullopt};
      if (faults_.draw(faults_.remove_transient)) {
        o.error = error(objstore::Op::remove_many, k, 503, "", true);
      } else {
        erase(k);
      }
      out.push_back(std::move(o));
    }
    return out;
  }
  objstore::ObjectResult<objstore::ListPage> list(const objstore::ListRequest& req) override {
    objstore::ListPage page;
    for (auto it = objects_.lower_bound(req.prefix);
         it != objects_.end() && it->first.compare(0, req.prefix.size(), req.prefix) == 0; ++it) {
      page.objects.push_back(objstore::ObjectInfo{it->first, it->second.size(), "", {}, {}});
    }
    return page;
  }
  objstore::ObjectStatus check_access() override { return objstore::ObjectStatus::OK(); }
  std::string describe() const override { return "sim"; }

 private:
  static objstore::ObjectError error(objstore::Op op, std::string_view key, int status,
                                     std::string code, bool transient) {
    return objstore::ObjectError{
        op,         std::string(key),
        status,     std::move(code),
        "injected", transient ? objstore::RetryClass::transient : objstore::RetryClass::fatal};
  }
  static objstore::ObjectError missing(objstore::Op op, std::string_view key) {
    return objstore::ObjectError{op,          std::string(key), 404,
                                 "NoSuchKey", "no object",      objstore::RetryClass::not_found};
  }
  void erase(std::string_view key) {
    auto it = objects_.find(key);
    if (it == objects_.end()) return;
    if (before_remove) before_remove(it->first);
    objects_.erase(it);
    removes += 1;
  }

  SimFaults& faults_;
  std::map<std::string, Bytes, std::less<>> objects_;
};

class SimCatalog final : public catalog::Catalog {
 public:
  explicit SimCatalog(SimFaults& f) : faults_(f) {}

  // Called after every change of an entry (also one reported as failed).
  std::function<void()> after_change;
  // The catalog without faults, for the checker and the simulation's own
  // writes (another node taking the stream over).
  catalog::MemoryCatalog& inner() { return inner_; }

  Result<catalog::StreamEntry> create(std::string_view stream, uint64_t epoch) override {
    STRATA_TRY(before("create"));
    auto r = inner_.create(stream, epoch);
    if (r.ok()) changed();
    STRATA_TRY(after("create"));
    return r;
  }
  Result<catalog::StreamEntry> get(std::string_view stream) override {
    STRATA_TRY(before("get"));
    return inner_.get(stream);
  }
  Result<std::vector<catalog::StreamEntry>> list() override { return inner_.list(); }
  Result<catalog::PutResult> put(std::string_view stream, std::string_view root_key, uint64_t epoch,
                                 uint64_t expected_revision) override {
    STRATA_TRY(before("put"));
    auto r = inner_.put(stream, root_key, epoch, expected_revision);
    if (r.ok() && r->outcome == catalog::PutOutcome::ok) changed();
    STRATA_TRY(after("put"));
    return r;
  }
  Result<catalog::PutResult> bump_epoch(std::string_view stream, uint64_t expected_revision,
                                        uint64_t min_epoch) override {
    STRATA_TRY(before("bump_epoch"));
    auto r = inner_.bump_epoch(stream, expected_revision, min_epoch);
    if (r.ok() && r->outcome == catalog::PutOutcome::ok) changed();
    STRATA_TRY(after("bump_epoch"));
    return r;
  }
  Result<catalog::PutResult> remove(std::string_view stream, uint64_t expected_revision) override {
    return inner_.remove(stream, expected_revision);
  }
  std::string describe() const override { return "sim"; }

 private:
  Status before(const char* op) {
    if (faults_.draw(faults_.catalog_before)) {
      return Error(Errc::unavailable, fmt::format("catalog: injected failure of {}", op));
    }
    return Status::OK();
  }
  Status after(const char* op) {
    if (faults_.draw(faults_.catalog_after)) {
      return Error(Errc::unavailable,
                   fmt::format("catalog: {} applied, but its reply was lost (injected)", op));
    }
    return Status::OK();
  }
  void changed() {
    if (after_change) after_change();
  }

  SimFaults& faults_;
  catalog::MemoryCatalog inner_;
};

// One uploader's view of the catalog (as a node gives each stream's
// uploader its own gate): the same catalog, with the uploader's take-overs
// shown to a checker first.
class CatalogView final : public catalog::Catalog {
 public:
  CatalogView(std::shared_ptr<catalog::Catalog> inner, std::function<void()> before_take_over)
      : inner_(std::move(inner)), before_take_over_(std::move(before_take_over)) {}

  Result<catalog::StreamEntry> create(std::string_view stream, uint64_t epoch) override {
    return inner_->create(stream, epoch);
  }
  Result<catalog::StreamEntry> get(std::string_view stream) override { return inner_->get(stream); }
  Result<std::vector<catalog::StreamEntry>> list() override { return inner_->list(); }
  Result<catalog::PutResult> put(std::string_view stream, std::string_view root_key, uint64_t epoch,
                                 uint64_t expected_revision) override {
    return inner_->put(stream, root_key, epoch, expected_revision);
  }
  Result<catalog::PutResult> bump_epoch(std::string_view stream, uint64_t expected_revision,
                                        uint64_t min_epoch) override {
    before_take_over_();
    return inner_->bump_epoch(stream, expected_revision, min_epoch);
  }
  Result<catalog::PutResult> remove(std::string_view stream, uint64_t expected_revision) override {
    return inner_->remove(stream, expected_revision);
  }
  std::string describe() const override { return inner_->describe(); }

 private:
  std::shared_ptr<catalog::Catalog> inner_;
  std::function<void()> before_take_over_;
};

}  // namespace strata::tier::test
