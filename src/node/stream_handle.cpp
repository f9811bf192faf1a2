#include "node/stream_handle.h"

#include <fmt/format.h>

#include "common/clock.h"
#include "node/node_limits.h"
#include "tier/uploader.h"

namespace strata::node {

StreamHandle::StreamHandle(std::string name, EffectiveSettings effective,
                           std::shared_ptr<log::StreamLog> log,
                           std::shared_ptr<tier::Uploader> uploader, tier::TierContext tier,
                           std::shared_ptr<const std::atomic<bool>> disk_alarm,
                           std::shared_ptr<const std::atomic<int64_t>> lease_until)
    : name_(std::move(name)),
      effective_(std::move(effective)),
      log_(std::move(log)),
      uploader_(std::move(uploader)),
      tier_(std::move(tier)),
      disk_alarm_(std::move(disk_alarm)),
      lease_until_(std::move(lease_until)) {}

StreamHandle::~StreamHandle() = default;

bool StreamHandle::lease_ended() const {
  if (!lease_until_) return false;
  // The ownership shell's clock: steady, ms since its epoch.
  const int64_t now = system_clock().monotonic_ns() / 1'000'000;
  return now >= lease_until_->load(std::memory_order_acquire);
}

Result<log::AppendResult> StreamHandle::append(const log::EntryBatch& batch) {
  if (lease_ended()) {
    return Error(Errc::unavailable,
                 fmt::format("stream {}: this node's cluster lease has ended: nothing is written "
                             "until it is renewed (another node may own the stream by now)",
                             name_));
  }
  return log_->append_entries(batch);
}

std::optional<uint64_t> StreamHandle::writer_sequence(std::string_view ref) const {
  return log_->writer_sequence(ref);
}

uint64_t StreamHandle::committed_next() const {
  return log_->committed_next();
}

const std::string& StreamHandle::dir() const {
  return log_->dir();
}

uint64_t StreamHandle::max_chunk_bytes() const {
  return log_->options().max_chunk_bytes;
}

uint64_t StreamHandle::subscribe(std::function<void(const log::CommittedChunk&)> listener) {
  return log_->subscribe(std::move(listener));
}

void StreamHandle::unsubscribe(uint64_t id) {
  log_->unsubscribe(id);
}

std::optional<uint64_t> StreamHandle::last_chunk_id() {
  if (log_->committed_next() == 0) return std::nullopt;
  auto r = log_->resolve(log::OffsetSpec::last());
  if (!r.ok()) return std::nullopt;
  return r->chunk_first_offset;
}

std::optional<uint64_t> StreamHandle::chunk_id_of(uint64_t offset) {
  auto r = log_->resolve(log::OffsetSpec::at_offset(offset));
  if (!r.ok()) return std::nullopt;
  return r->chunk_first_offset;
}

uint64_t StreamHandle::first_offset() const {
  uint64_t first = log_->first_offset();
  if (!tier_.cache) return first;
  auto m = tier_.cache->get(name_);
  if (m.ok() && m->manifest && !m->manifest->empty() && m->manifest->first_offset < first) {
    first = m->manifest->first_offset;
  }
  return first;
}

LagBytes StreamHandle::lag_bytes(const std::optional<LogMark>& mark, uint64_t from_offset) const {
  return bytes_after(log_->segments(), mark, from_offset, log_->committed_next());
}

uint64_t StreamHandle::persisted_next() const {
  return uploader_ ? uploader_->persisted_next() : 0;
}

void StreamHandle::await_remote(uint64_t offset, std::function<void(Status)> done) {
  if (!uploader_) {
    done(Error(Errc::unavailable,
               fmt::format("stream {} is not tiered: nothing is persisted remotely", name_)));
    return;
  }
  uploader_->await_remote(offset, std::move(done));
}

Result<std::unique_ptr<tier::StreamReader>> StreamHandle::open_reader(
    const log::OffsetSpec& spec, tier::StreamReaderOptions opts) {
  auto r = tier::StreamReader::open(log_, tier_, spec, opts);
  if (r.ok() || r.code() != Errc::unavailable || !uploader_ || !tier_.cache) return r;
  if (uploader_->state() != tier::UploaderState::starting) return r;
  // The uploader installs the persisted manifest in the cache once it has
  // loaded it: woken by that, not by polling.
  if (!tier_.cache->await_available(name_, kReaderAwaitsManifest)) return r;
  return tier::StreamReader::open(log_, tier_, spec, opts);
}

}  // namespace strata::node
