#include "objstore/metered_store.h"

#include "common/clock.h"

namespace strata::objstore {

namespace {
int64_t now_ns() {
  return system_clock().monotonic_ns();
}
}  // namespace

void MeteredStore::record(Op op, int64_t start_ns, const ObjectError* err, uint64_t bytes) {
  Counters& c = c_[size_t(op)];
  c.requests.fetch_add(1, std::memory_order_relaxed);
  c.bytes.fetch_add(bytes, std::memory_order_relaxed);
  c.latency.record_us(uint64_t(std::max<int64_t>(0, now_ns() - start_ns) / 1000));
  if (!err) return;
  switch (err->retry) {
    case RetryClass::transient:
      c.transient.fetch_add(1, std::memory_order_relaxed);
      break;
    case RetryClass::fatal:
      c.fatal.fetch_add(1, std::memory_order_relaxed);
      break;
    case RetryClass::not_found:
      c.not_found.fetch_add(1, std::memory_order_relaxed);
      break;
  }
}

ObjectResult<PutResult> MeteredStore::put(std::string_view key, BodyParts body,
                                          const PutOptions& opts) {
  int64_t t = now_ns();
  auto r = inner_->put(key, body, opts);
  uint64_t n = 0;
  for (auto p : body) n += p.size();
  record(Op::put, t, r.ok() ? nullptr : &r.error(), r.ok() ? n : 0);
  return r;
}

ObjectResult<uint64_t> MeteredStore::get_to(std::string_view key, const GetSink& sink,
                                            const GetLimits& limits) {
  int64_t t = now_ns();
  auto r = inner_->get_to(key, sink, limits);
  record(Op::get, t, r.ok() ? nullptr : &r.error(), r.ok() ? *r : 0);
  return r;
}

ObjectResult<uint64_t> MeteredStore::read_range(std::string_view key, uint64_t offset,
                                                std::span<uint8_t> dst) {
  int64_t t = now_ns();
  auto r = inner_->read_range(key, offset, dst);
  record(Op::get_range, t, r.ok() ? nullptr : &r.error(), r.ok() ? *r : 0);
  return r;
}

ObjectResult<ObjectInfo> MeteredStore::head(std::string_view key) {
  int64_t t = now_ns();
  auto r = inner_->head(key);
  record(Op::head, t, r.ok() ? nullptr : &r.error(), 0);
  return r;
}

ObjectStatus MeteredStore::remove(std::string_view key) {
  int64_t t = now_ns();
  auto r = inner_->remove(key);
  record(Op::remove, t, r.ok() ? nullptr : &r.error(), 0);
  return r;
}

std::vector<RemoveOutcome> MeteredStore::remove_many(std::span<const std::string> keys) {
  int64_t t = now_ns();
  auto r = inner_->remove_many(keys);
  const ObjectError* first = nullptr;
  for (const auto& o : r) {
    if (!o.ok()) {
      first = &*o.error;
      break;
    }
  }
  record(Op::remove_many, t, first, 0);
  return r;
}

ObjectResult<ListPage> MeteredStore::list(const ListRequest& req) {
  int64_t t = now_ns();
  auto r = inner_->list(req);
  record(Op::list, t, r.ok() ? nullptr : &r.error(), 0);
  return r;
}

ObjectStatus MeteredStore::check_access() {
  int64_t t = now_ns();
  auto r = inner_->check_access();
  record(Op::check, t, r.ok() ? nullptr : &r.error(), 0);
  return r;
}

OpStats MeteredStore::stats(Op op) const {
  const Counters& c = c_[size_t(op)];
  OpStats s;
  s.requests = c.requests.load(std::memory_order_relaxed);
  s.transient_errors = c.transient.load(std::memory_order_relaxed);
  s.fatal_errors = c.fatal.load(std::memory_order_relaxed);
  s.not_found = c.not_found.load(std::memory_order_relaxed);
  s.bytes = c.bytes.load(std::memory_order_relaxed);
  s.latency = c.latency.snapshot();
  return s;
}

}  // namespace strata::objstore
