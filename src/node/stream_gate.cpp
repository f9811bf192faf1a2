#include "node/stream_gate.h"

#include <fmt/format.h>

namespace strata::node {

using namespace objstore;

StreamGate::Pass::Pass(StreamGate& g) : g_(g) {
  std::lock_guard l(g_.mu_);
  admitted_ = !g_.closed_;
  if (admitted_) g_.in_flight_ += 1;
}

StreamGate::Pass::~Pass() {
  if (!admitted_) return;
  std::lock_guard l(g_.mu_);
  g_.in_flight_ -= 1;
  if (g_.in_flight_ == 0) g_.idle_.notify_all();
}

void StreamGate::close() {
  std::lock_guard l(mu_);
  closed_ = true;
}

bool StreamGate::wait_idle(std::chrono::milliseconds timeout) {
  std::unique_lock l(mu_);
  return idle_.wait_for(l, timeout, [&] { return in_flight_ == 0; });
}

uint64_t StreamGate::in_flight() const {
  std::lock_guard l(mu_);
  return in_flight_;
}

std::string StreamGate::refusal() const {
  return fmt::format("stream {} is being deleted", stream_);
}

// ---- GatedStore ----

ObjectError GatedStore::refused(Op op, std::string_view key) const {
  ObjectError e;
  e.op = op;
  e.key = std::string(key);
  e.message = gate_->refusal();
  e.retry = RetryClass::fatal;
  return e;
}

ObjectResult<PutResult> GatedStore::put(std::string_view key, BodyParts body,
                                        const PutOptions& opts) {
  StreamGate::Pass p(*gate_);
  if (!p.admitted()) return refused(Op::put, key);
  return inner_->put(key, body, opts);
}

ObjectResult<uint64_t> GatedStore::get_to(std::string_view key, const GetSink& sink,
                                          const GetLimits& limits) {
  StreamGate::Pass p(*gate_);
  if (!p.admitted()) return refused(Op::get, key);
  return inner_->get_to(key, sink, limits);
}

ObjectResult<uint64_t> GatedStore::read_range(std::string_view key, uint64_t offset,
                                              std::span<uint8_t> dst) {
  StreamGate::Pass p(*gate_);
  if (!p.admitted()) return refused(Op::get_range, key);
  return inner_->read_range(key, offset, dst);
}

ObjectResult<ObjectInfo> GatedStore::head(std::string_view key) {
  StreamGate::Pass p(*gate_);
  if (!p.admitted()) return refused(Op::head, key);
  return inner_->head(key);
}

ObjectStatus GatedStore::remove(std::string_view key) {
  StreamGate::Pass p(*gate_);
  if (!p.admitted()) return refused(Op::remove, key);
  return inner_->remove(key);
}

std::vector<RemoveOutcome> GatedStore::remove_many(std::span<const std::string> keys) {
  StreamGate::Pass p(*gate_);
  if (!p.admitted()) {
    std::vector<RemoveOutcome> out;
    for (const auto& k : keys) out.push_back(RemoveOutcome{k, refused(Op::remove_many, k)});
    return out;
  }
  return inner_->remove_many(keys);
}

ObjectResult<ListPage> GatedStore::list(const ListRequest& req) {
  StreamGate::Pass p(*gate_);
  if (!p.admitted()) return refused(Op::list, req.prefix);
  return inner_->list(req);
}

ObjectStatus GatedStore::check_access() {
  StreamGate::Pass p(*gate_);
  if (!p.admitted()) return refused(Op::check, "");
  return inner_->check_access();
}

// ---- GatedCatalog ----

Result<catalog::StreamEntry> GatedCatalog::create(std::string_view stream, uint64_t epoch) {
  StreamGate::Pass p(*gate_);
  if (!p.admitted()) return refused();
  return inner_->create(stream, epoch);
}

Result<catalog::StreamEntry> GatedCatalog::get(std::string_view stream) {
  StreamGate::Pass p(*gate_);
  if (!p.admitted()) return refused();
  return inner_->get(stream);
}

Result<std::vector<catalog::StreamEntry>> GatedCatalog::list() {
  StreamGate::Pass p(*gate_);
  if (!p.admitted()) return refused();
  return inner_->list();
}

Result<catalog::PutResult> GatedCatalog::put(std::string_view stream, std::string_view root_key,
                                             uint64_t epoch, uint64_t expected_revision) {
  StreamGate::Pass p(*gate_);
  if (!p.admitted()) return refused();
  return inner_->put(stream, root_key, epoch, expected_revision);
}

Result<catalog::PutResult> GatedCatalog::bump_epoch(std::string_view stream,
                                                    uint64_t expected_revision,
                                                    uint64_t min_epoch) {
  StreamGate::Pass p(*gate_);
  if (!p.admitted()) return refused();
  return inner_->bump_epoch(stream, expected_revision, min_epoch);
}

Result<catalog::PutResult> GatedCatalog::bump_epoch_if_owner(std::string_view stream,
                                                             uint64_t expected_revision,
                                                             uint64_t min_epoch,
                                                             const catalog::OwnerCondition& owner) {
  StreamGate::Pass p(*gate_);
  if (!p.admitted()) return refused();
  return inner_->bump_epoch_if_owner(stream, expected_revision, min_epoch, owner);
}

Result<catalog::PutResult> GatedCatalog::remove(std::string_view stream,
                                                uint64_t expected_revision) {
  StreamGate::Pass p(*gate_);
  if (!p.admitted()) return refused();
  return inner_->remove(stream, expected_revision);
}

}  // namespace strata::node
