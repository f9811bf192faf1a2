// StoreOffset / QueryOffset on a cluster node: the offsets are in etcd
// (server/cluster_offsets.h) and follow the stream, so any node that knows
// the stream — serving it or seeing it in the catalog — takes a store and
// answers a query, not only its owner.
#include <spdlog/spdlog.h>

#include "server/connection.h"
#include "server/server.h"

namespace strata::server {

using namespace proto;

namespace {
constexpr std::chrono::milliseconds kQueryDeadline{30'000};
}  // namespace

void Connection::store_cluster_offset(const StoreOffsetRequest& r) {
  if (!server_.node().stream(r.stream).ok() && !server_.served_elsewhere(r.stream)) return;
  if (auto st = server_.cluster_offsets()->store(r.stream, r.reference, r.offset); !st.ok()) {
    spdlog::info("connection {}: store offset: {}", id_, st.error().message);
  }
}

void Connection::query_cluster_offset(const QueryOffsetRequest& r) {
  if (!server_.node().stream(r.stream).ok() && !server_.served_elsewhere(r.stream)) {
    QueryOffsetResponse resp;
    resp.correlation_id = r.correlation_id;
    resp.code = ResponseCode::stream_does_not_exist;
    send_message(resp);
    return;
  }
  // An etcd read: on the pool, back on the strand as one event.
  ClusterOffsets* offsets = server_.cluster_offsets();
  run_task<Result<std::optional<uint64_t>>>(
      server_.tasks(), strand_, kQueryDeadline, "query offset of " + r.stream,
      [offsets, stream = r.stream, ref = r.reference] { return offsets->query(stream, ref); },
      [self = shared_from_this(), corr = r.correlation_id,
       stream = r.stream](TaskOutcome<Result<std::optional<uint64_t>>> out) {
        QueryOffsetResponse resp;
        resp.correlation_id = corr;
        if (out.end != TaskEnd::completed || !out.value->ok()) {
          spdlog::warn("connection {}: query offset of {}: {}", self->id_, stream,
                       out.end != TaskEnd::completed ? out.error.to_string()
                                                     : out.value->error().to_string());
          resp.code = ResponseCode::internal_error;
        } else if (**out.value) {
          resp.offset = ***out.value;
        } else {
          resp.code = ResponseCode::no_offset;
        }
        self->send_message(resp);
      });
}

}  // namespace strata::server
