// StreamAdminRoom: the commands that create, delete and describe streams
// and super streams — Create, Delete, Metadata, StreamStats, Route,
// Partitions, CreateSuperStream, DeleteSuperStream. Creations and
// deletions block (a node's open, the removal of every object), so they run
// as tasks on the pool and are answered when they end, one event each.
//
// Thread safety: the connection's strand.
#pragma once

#include "common/task.h"
#include "server/owner_asker.h"
#include "server/room_services.h"
#include "server/session.h"

namespace strata::server {

class StreamAdminRoom {
 public:
  StreamAdminRoom(Session& session, StreamAdmin& admin, StreamDirectory& streams,
                  OwnerAsker& owners, TaskContext tasks);

  void on(const proto::CreateStreamRequest& r);
  void on(const proto::DeleteStreamRequest& r);
  void on(const proto::MetadataRequest& r);
  void on(const proto::StreamStatsRequest& r);
  void on(const proto::RouteRequest& r);
  void on(const proto::PartitionsRequest& r);
  void on(const proto::CreateSuperStreamRequest& r);
  void on(const proto::DeleteSuperStreamRequest& r);

 private:
  bool super_stream_managed(const std::string& name, const std::vector<std::string>& partitions,
                            std::string_view command);
  // Runs `op` as a task and answers `key` with its outcome's code.
  void run_admin(uint16_t key, uint32_t correlation_id, std::string what,
                 std::function<Status()> op);

  Session& session_;
  StreamAdmin& admin_;
  StreamDirectory& streams_;
  OwnerAsker& owners_;
  TaskContext tasks_;
};

}  // namespace strata::server
