#include "server/served_stream.h"

namespace strata::server {

ServedStream::ServedStream(std::shared_ptr<node::StreamHandle> stream,
                           std::shared_ptr<StreamAppender> appender,
                           std::shared_ptr<DeliveryLimit> limit,
                           std::shared_ptr<ReplicaAcks> replicas)
    : stream_(std::move(stream)),
      appender_(std::move(appender)),
      limit_(std::move(limit)),
      replicas_(std::move(replicas)) {
  // Subscribe before reading the current end, so no commit falls between.
  listener_ = stream_->subscribe(
      [this](const log::CommittedChunk& c) { on_commit(c.header.first_offset); });
  if (auto last = stream_->last_chunk_id()) on_commit(*last);
}

ServedStream::~ServedStream() {
  stream_->unsubscribe(listener_);
}

void ServedStream::on_commit(uint64_t first_offset) {
  int64_t cur = last_chunk_id_.load();
  while (cur < int64_t(first_offset) &&
         !last_chunk_id_.compare_exchange_weak(cur, int64_t(first_offset))) {
  }
}

void ServedStream::watch(const std::shared_ptr<StreamWatcher>& w) {
  std::lock_guard l(mu_);
  for (auto it = watchers_.begin(); it != watchers_.end();) {
    auto p = it->lock();
    if (!p) {
      it = watchers_.erase(it);
      continue;
    }
    if (p == w) return;
    ++it;
  }
  watchers_.push_back(w);
}

std::vector<std::shared_ptr<StreamWatcher>> ServedStream::watchers() {
  std::lock_guard l(mu_);
  std::vector<std::shared_ptr<StreamWatcher>> out;
  for (auto& w : watchers_) {
    if (auto p = w.lock()) out.push_back(std::move(p));
  }
  return out;
}

void ServedStream::retire() {
  if (retired_.exchange(true)) return;
  appender_->stop(proto::ResponseCode::stream_not_available);
  if (replicas_) replicas_->fail_all(Error(Errc::unavailable, "the stream is no longer served here"));
}

}  // namespace strata::server
