#include "server/offset_room.h"

#include <spdlog/spdlog.h>

#include "server/server_limits.h"

namespace strata::server {

using namespace proto;

OffsetRoom::OffsetRoom(Session& session, ConsumerOffsets& offsets, TaskContext tasks)
    : session_(session), offsets_(offsets), tasks_(std::move(tasks)) {}

void OffsetRoom::on(const StoreOffsetRequest& r) {
  // StoreOffset has no answer: a refusal is only logged and counted.
  if (!session_.allowed(Permission::read, r.stream, "store offset")) return;
  Status st = offsets_.store(r.stream, r.reference, r.offset);
  // A store for a stream unknown here is dropped silently, as before.
  if (!st.ok() && st.code() != Errc::not_found) {
    spdlog::info("connection {}: store offset: {}", session_.id(), st.error().message);
  }
}

void OffsetRoom::on(const QueryOffsetRequest& r) {
  if (!session_.allowed(Permission::read, r.stream, "query offset")) {
    QueryOffsetResponse resp;
    resp.correlation_id = r.correlation_id;
    resp.code = ResponseCode::access_refused;
    send_message(session_, resp);
    return;
  }
  if (!offsets_.query_blocks()) {
    answer(r.correlation_id, r.stream, offsets_.query(r.stream, r.reference));
    return;
  }
  // An etcd read: on the pool, back on the strand as one event.
  using R = Result<std::optional<uint64_t>>;
  run_task<R>(
      tasks_, session_.strand(), kOffsetQueryDeadline, "query offset of " + r.stream,
      [offsets = &offsets_, stream = r.stream, ref = r.reference] {
        return offsets->query(stream, ref);
      },
      [hold = session_.hold(), this, corr = r.correlation_id,
       stream = r.stream](TaskOutcome<R> out) {
        answer(corr, stream, out.end == TaskEnd::completed ? std::move(*out.value) : R(out.error));
      });
}

void OffsetRoom::answer(uint32_t correlation_id, const std::string& stream,
                        const Result<std::optional<uint64_t>>& offset) {
  QueryOffsetResponse resp;
  resp.correlation_id = correlation_id;
  if (!offset.ok()) {
    if (offset.code() == Errc::not_found) {
      resp.code = ResponseCode::stream_does_not_exist;
    } else {
      spdlog::warn("connection {}: query offset of {}: {}", session_.id(), stream,
                   offset.error().to_string());
      resp.code = ResponseCode::internal_error;
    }
  } else if (*offset) {
    resp.offset = **offset;
  } else {
    resp.code = ResponseCode::no_offset;
  }
  send_message(session_, resp);
}

}  // namespace strata::server
