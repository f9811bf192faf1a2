#include "server/stream_admin_room.h"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "common/stream_name.h"
#include "server/server_limits.h"
#include "server/stream_args.h"
#include "server/super_streams.h"

namespace strata::server {

using namespace proto;

namespace {

ResponseCode code_for_stream_error(const Error& e) {
  switch (e.code) {
    case Errc::not_found:
      return ResponseCode::stream_does_not_exist;
    case Errc::already_exists:
      return ResponseCode::stream_already_exists;
    case Errc::invalid_argument:
      return ResponseCode::precondition_failed;
    case Errc::unavailable:
      return ResponseCode::stream_not_available;
    default:
      return ResponseCode::internal_error;
  }
}

// The response code of a stream operation run as a task, logging why it
// failed — a task that threw or missed its deadline included. "Already
// exists" is the client's answer, not a server problem.
ResponseCode code_for_stream_op(const TaskOutcome<Status>& out, std::string_view what) {
  if (out.end == TaskEnd::completed && out.value->ok()) return ResponseCode::ok;
  const Error& e = out.end == TaskEnd::completed ? out.value->error() : out.error;
  ResponseCode code =
      out.end == TaskEnd::completed ? code_for_stream_error(e) : ResponseCode::internal_error;
  if (code != ResponseCode::stream_already_exists) {
    spdlog::warn("{}: {}", what, e.to_string());
  }
  return code;
}

}  // namespace

StreamAdminRoom::StreamAdminRoom(Session& session, StreamAdmin& admin, StreamDirectory& streams,
                                 OwnerAsker& owners, TaskContext tasks)
    : session_(session),
      admin_(admin),
      streams_(streams),
      owners_(owners),
      tasks_(std::move(tasks)) {}

void StreamAdminRoom::run_admin(uint16_t key, uint32_t correlation_id, std::string what,
                                std::function<Status()> op) {
  run_task<Status>(
      tasks_, session_.strand(), kStreamOpDeadline, what, std::move(op),
      [hold = session_.hold(), this, key, correlation_id, what](TaskOutcome<Status> out) {
        respond_code(session_, key, correlation_id, code_for_stream_op(out, what));
      });
}

// RabbitMQ's rule for managing a super stream (its exchange, its
// partitions and the bindings between them): configure on the super stream
// and on each partition, read on the super stream, write on each partition.
bool StreamAdminRoom::super_stream_managed(const std::string& name,
                                           const std::vector<std::string>& partitions,
                                           std::string_view command) {
  if (!session_.allowed(Permission::configure, name, command)) return false;
  for (const auto& p : partitions) {
    if (!session_.allowed(Permission::configure, p, command)) return false;
  }
  if (!session_.allowed(Permission::read, name, command)) return false;
  for (const auto& p : partitions) {
    if (!session_.allowed(Permission::write, p, command)) return false;
  }
  return true;
}

// A name the rule refuses (common/stream_name.h) is answered as RabbitMQ
// answers one starting with "amq." or an empty one: precondition_failed.
void StreamAdminRoom::on(const CreateStreamRequest& r) {
  if (auto st = validate_stream_name(r.stream); !st.ok()) {
    spdlog::info("connection {}: create stream: {}", session_.id(), st.error().message);
    respond_code(session_, kCreate, r.correlation_id, ResponseCode::precondition_failed);
    return;
  }
  std::vector<std::string> ignored;
  auto args = parse_stream_args(r.arguments, &ignored);
  if (!args.ok()) {
    spdlog::info("connection {}: create {}: {}", session_.id(), printable_stream(r.stream),
                 args.error().message);
    respond_code(session_, kCreate, r.correlation_id, ResponseCode::precondition_failed);
    return;
  }
  if (!session_.allowed(Permission::configure, r.stream, "create stream")) {
    respond_code(session_, kCreate, r.correlation_id, ResponseCode::access_refused);
    return;
  }
  if (!ignored.empty()) {
    spdlog::info("connection {}: create {}: ignored unknown arguments {}", session_.id(),
                 printable_stream(r.stream), fmt::join(ignored, ", "));
  }
  run_admin(kCreate, r.correlation_id, "create stream " + printable_stream(r.stream),
            [admin = &admin_, name = r.stream, settings = std::move(args).value()] {
              return admin->create_stream(name, settings);
            });
}

void StreamAdminRoom::on(const DeleteStreamRequest& r) {
  if (!session_.allowed(Permission::configure, r.stream, "delete stream")) {
    respond_code(session_, kDelete, r.correlation_id, ResponseCode::access_refused);
    return;
  }
  run_admin(kDelete, r.correlation_id, "delete stream " + printable_stream(r.stream),
            [admin = &admin_, name = r.stream] { return admin->delete_stream(name); });
}

void StreamAdminRoom::on(const MetadataRequest& r) {
  // Only what the user may read or write is described; the others are
  // answered 16, as RabbitMQ answers them (whether they exist or not).
  std::vector<std::string> visible;
  std::vector<std::string> hidden;
  for (const auto& name : r.streams) (may_see(session_, name) ? visible : hidden).push_back(name);
  MetadataResponse resp = admin_.metadata(visible, session_.advertised());
  resp.correlation_id = r.correlation_id;
  for (auto& name : hidden) {
    resp.streams.push_back(
        StreamMetadata{std::move(name), ResponseCode::access_refused, 0xffff, {}});
  }
  for (auto& m : resp.streams) m.stream = session_.client_name(m.stream);
  send_message(session_, resp);
}

void StreamAdminRoom::on(const StreamStatsRequest& r) {
  StreamStatsResponse resp;
  resp.correlation_id = r.correlation_id;
  if (!session_.allowed(Permission::read, r.stream, "stream stats")) {
    resp.code = ResponseCode::access_refused;
    send_message(session_, resp);
    return;
  }
  auto s = streams_.served(r.stream);
  if (!s.ok()) {
    // Served by another node: its owner knows the chunks (owner_asker.h).
    auto answer = [this, resp](const StreamStatsResponse* got) mutable {
      resp.code = got ? got->code : ResponseCode::stream_not_available;
      if (got) resp.stats = got->stats;
      if (!session_.closed()) send_message(session_, resp);
    };
    if (owners_.forward<StreamStatsRequest, StreamStatsResponse>(r.stream, r, std::move(answer))) {
      return;
    }
    resp.code = streams_.missing_code(r.stream);
  } else {
    int64_t last = (*s)->last_chunk_id();
    // The oldest offset over both tiers.
    int64_t first = last >= 0 ? int64_t((*s)->stream()->first_offset()) : -1;
    resp.stats = {{"first_chunk_id", first}, {"committed_chunk_id", last}, {"last_chunk_id", last}};
  }
  send_message(session_, resp);
}

void StreamAdminRoom::on(const RouteRequest& r) {
  RouteResponse resp;
  resp.correlation_id = r.correlation_id;
  if (!session_.allowed(Permission::write, r.super_stream, "route")) {
    resp.code = ResponseCode::access_refused;
    send_message(session_, resp);
    return;
  }
  auto streams = admin_.route(r.super_stream, r.routing_key);
  if (streams.ok()) {
    for (const auto& s : *streams) resp.streams.push_back(session_.client_name(s));
  } else {
    resp.code = ResponseCode::stream_does_not_exist;
  }
  send_message(session_, resp);
}

void StreamAdminRoom::on(const PartitionsRequest& r) {
  PartitionsResponse resp;
  resp.correlation_id = r.correlation_id;
  if (!may_see(session_, r.super_stream)) {
    session_.allowed(Permission::read, r.super_stream, "partitions");  // logged and counted
    resp.code = ResponseCode::access_refused;
    send_message(session_, resp);
    return;
  }
  auto streams = admin_.partitions(r.super_stream);
  if (streams.ok()) {
    for (const auto& s : *streams) resp.streams.push_back(session_.client_name(s));
  } else {
    resp.code = ResponseCode::stream_does_not_exist;
  }
  send_message(session_, resp);
}

void StreamAdminRoom::on(const CreateSuperStreamRequest& r) {
  const SuperStream ss{r.name, r.partitions, r.binding_keys};
  if (auto st = validate_super_stream(ss); !st.ok()) {
    spdlog::info("connection {}: create super stream: {}", session_.id(), st.error().message);
    respond_code(session_, kCreateSuperStream, r.correlation_id, ResponseCode::precondition_failed);
    return;
  }
  auto args = parse_stream_args(r.arguments);
  if (!args.ok()) {
    spdlog::info("connection {}: create super stream {}: {}", session_.id(),
                 printable_stream(r.name), args.error().message);
    respond_code(session_, kCreateSuperStream, r.correlation_id, ResponseCode::precondition_failed);
    return;
  }
  if (!super_stream_managed(r.name, r.partitions, "create super stream")) {
    respond_code(session_, kCreateSuperStream, r.correlation_id, ResponseCode::access_refused);
    return;
  }
  run_admin(kCreateSuperStream, r.correlation_id, "create super stream " + printable_stream(r.name),
            [admin = &admin_, ss, settings = std::move(args).value()] {
              return admin->create_super_stream(ss, settings);
            });
}

void StreamAdminRoom::on(const DeleteSuperStreamRequest& r) {
  // Its partitions as the catalog knows them (none when it does not exist:
  // then the super stream's own permission decides, and the deletion
  // answers that it does not exist).
  auto partitions = admin_.partitions(r.name);
  if (!super_stream_managed(r.name, partitions.ok() ? *partitions : std::vector<std::string>{},
                            "delete super stream")) {
    respond_code(session_, kDeleteSuperStream, r.correlation_id, ResponseCode::access_refused);
    return;
  }
  run_admin(kDeleteSuperStream, r.correlation_id, "delete super stream " + printable_stream(r.name),
            [admin = &admin_, name = r.name] { return admin->delete_super_stream(name); });
}

}  // namespace strata::server
