// OffsetRoom: consumer offsets — StoreOffset (no answer in the protocol: a
// refused store is only logged) and QueryOffset. Where they are kept is the
// ConsumerOffsets' business (room_services.h); a query that waits on the
// network runs as a task.
//
// Thread safety: the connection's strand.
#pragma once

#include "common/task.h"
#include "server/room_services.h"
#include "server/session.h"

namespace strata::server {

class OffsetRoom {
 public:
  OffsetRoom(Session& session, ConsumerOffsets& offsets, TaskContext tasks);

  void on(const proto::StoreOffsetRequest& r);
  void on(const proto::QueryOffsetRequest& r);

 private:
  void answer(uint32_t correlation_id, const std::string& stream,
              const Result<std::optional<uint64_t>>& offset);

  Session& session_;
  ConsumerOffsets& offsets_;
  TaskContext tasks_;
};

}  // namespace strata::server
