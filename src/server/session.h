// Session: one client connection as its command rooms see it (connection.h
// composes them). A room answers and sends through it, runs its callbacks on
// the connection's strand, and holds the connection alive across them with
// hold(). It is the only way a room reaches its connection: a room never
// sees the socket, the other rooms, or the server.
//
// Thread safety: the strand's (every method but hold() runs on it).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/bytes.h"
#include "common/task.h"
#include "proto/commands.h"
#include "server/access_policy.h"
#include "server/delivery.h"
#include "server/room_services.h"
#include "server/served_stream.h"

namespace strata::server {

class Session {
 public:
  virtual ~Session() = default;

  virtual uint64_t id() const = 0;
  virtual const std::string& peer() const = 0;
  virtual bool loopback() const = 0;
  // The address this client is told to use for this node (the listener it
  // came through: plain or TLS).
  virtual const Advertised& advertised() const = 0;
  // Whether Deliver bodies may go out by sendfile (transport.h): false
  // over TLS, so deliveries read them into memory on the pool.
  virtual bool sendfile() const = 0;
  virtual Strand& strand() = 0;
  // Keeps the connection and its rooms alive; captured by callbacks that
  // come back to a room after a task or a wait.
  virtual std::shared_ptr<void> hold() = 0;
  virtual bool closed() const = 0;

  // Queues one encoded frame (in order with every other frame).
  virtual void send(Bytes frame) = 0;
  // Where Deliver frames go (sendfile where the kernel allows it).
  virtual std::shared_ptr<FrameSink> frames() = 0;
  // This connection as a watcher of the streams it uses (served_stream.h).
  virtual std::shared_ptr<StreamWatcher> watcher() = 0;
  // The id of a request the server sends (Close, ConsumerUpdate).
  virtual uint32_t next_correlation() = 0;
  // A stored stream or super stream name (vhost_names.h) as this client
  // names it: what every name a room sends back goes through.
  virtual std::string client_name(const std::string& stored) const = 0;
  // Whether the connection's user may do `p` on `resource` (a stored name)
  // in its virtual host (access_policy.h).
  virtual bool permitted(Permission p, const std::string& resource) = 0;
  // The same for `command`, a refusal logged and counted here; the room
  // answers it.
  virtual bool allowed(Permission p, const std::string& resource, std::string_view command) = 0;

  // Counts an answer with an error code (ServerCounters::errors_by_code);
  // send_message and respond_code call it.
  virtual void count_error(proto::ResponseCode code) = 0;

  // Closes at once, dropping what is not written.
  virtual void close_now(const std::string& why) = 0;
  // Sends Close (code, reason), then closes once it is written.
  virtual void close_with(proto::ResponseCode code, const std::string& reason) = 0;
  // Closes once what is queued is written.
  virtual void close_after_flush() = 0;
};

// Encodes one protocol message (proto/commands.h) and queues it.
template <class Message>
void send_message(Session& s, const Message& m) {
  // A response with an error code is counted (notices such as
  // MetadataUpdate carry a code too, but answer nothing).
  if constexpr (requires { m.code; }) {
    if ((Message::kKey & proto::kResponseFlag) != 0 && m.code != proto::ResponseCode::ok) {
      s.count_error(m.code);
    }
  }
  Bytes f;
  encode(m, &f);
  s.send(std::move(f));
}

// Read or write: what Metadata and Partitions ask (quietly: a refusal is
// an answer, not an incident).
inline bool may_see(Session& s, const std::string& resource) {
  return s.permitted(Permission::read, resource) || s.permitted(Permission::write, resource);
}

// The response of a command whose answer is a code alone.
void respond_code(Session& s, uint16_t key, uint32_t correlation_id, proto::ResponseCode code);

}  // namespace strata::server
