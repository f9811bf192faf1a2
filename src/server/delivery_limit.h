// DeliveryLimit: where a subscription's delivery must stop for now. A
// stream with `confirm = remote` (node/node_config.h, ConfirmMode) delivers
// only chunks below its persisted manifest's end: what a consumer reads is
// then what survives the owner's disk and a takeover (the new owner's log
// starts at that end, docs/ARCHITECTURE.md "Stream ownership"). Without the
// limit a consumer could read an unpersisted tail that a takeover drops and
// the next owner rewrites at the same offsets with other records — the
// read-uncommitted anomaly RabbitMQ avoids by delivering only chunks a
// quorum holds. With `confirm = local` a consumer reads what the local log
// committed — in a cluster only while the node's lease holds (lease_limit).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "common/result.h"
#include "node/stream_handle.h"

namespace strata::server {

class DeliveryLimit {
 public:
  virtual ~DeliveryLimit() = default;
  // Chunks starting at or above this offset are not delivered yet.
  virtual uint64_t end() const = 0;
  // Calls `done` once end() > offset, or with the error that means it never
  // will be (the uploader stopped: the stream is no longer served here).
  // Any thread; `done` may run before this returns.
  virtual void await_beyond(uint64_t offset, std::function<void(Status)> done) = 0;
};

// The persisted manifest's end as the stream's uploader knows it; null when
// the stream is not tiered.
std::shared_ptr<DeliveryLimit> persisted_limit(std::shared_ptr<node::StreamHandle> stream);

// No bound but the node's cluster lease (StreamHandle::lease_ended): a node
// whose lease has ended delivers nothing more — not a chunk read before
// and sent after (a process frozen past its lease and thawed). The wait at
// the limit ends with unavailable: the consumer is told, as when the
// stream is released here a tick later, and looks for the new owner.
std::shared_ptr<DeliveryLimit> lease_limit(std::shared_ptr<node::StreamHandle> stream);

}  // namespace strata::server
