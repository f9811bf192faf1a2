#include "server/served_stream.h"

#include "log/offset_spec.h"

namespace strata::server {

ServedStream::ServedStream(std::string name, std::shared_ptr<log::StreamLog> log,
                           std::shared_ptr<StreamAppender> appender,
                           std::shared_ptr<DeliveryLimit> limit)
    : name_(std::move(name)),
      log_(std::move(log)),
      appender_(std::move(appender)),
      limit_(std::move(limit)) {
  // Subscribe before reading the current end, so no commit falls between.
  listener_ =
      log_->subscribe([this](const log::CommittedChunk& c) { on_commit(c.header.first_offset); });
  if (log_->committed_next() > 0) {
    auto r = log_->resolve(log::OffsetSpec::last());
    if (r.ok() && !r->claim) {
      int64_t id = int64_t(r->chunk_first_offset);
      int64_t cur = last_chunk_id_.load();
      while (cur < id && !last_chunk_id_.compare_exchange_weak(cur, id)) {
      }
    }
  }
}

ServedStream::~ServedStream() {
  log_->unsubscribe(listener_);
}

void ServedStream::on_commit(uint64_t first_offset) {
  int64_t cur = last_chunk_id_.load();
  while (cur < int64_t(first_offset) &&
         !last_chunk_id_.compare_exchange_weak(cur, int64_t(first_offset))) {
  }
}

void ServedStream::watch(const std::shared_ptr<Connection>& c) {
  std::lock_guard l(mu_);
  for (auto it = watchers_.begin(); it != watchers_.end();) {
    auto p = it->lock();
    if (!p) {
      it = watchers_.erase(it);
      continue;
    }
    if (p == c) return;
    ++it;
  }
  watchers_.push_back(c);
}

std::vector<std::shared_ptr<Connection>> ServedStream::watchers() {
  std::lock_guard l(mu_);
  std::vector<std::shared_ptr<Connection>> out;
  for (auto& w : watchers_) {
    if (auto p = w.lock()) out.push_back(std::move(p));
  }
  return out;
}

void ServedStream::retire() {
  if (retired_.exchange(true)) return;
  appender_->stop(proto::ResponseCode::stream_not_available);
}

}  // namespace strata::server
