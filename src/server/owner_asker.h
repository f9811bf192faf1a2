// OwnerAsker: a client's question about a stream another node of the
// cluster owns, asked of that owner on the client's behalf. RabbitMQ
// answers QueryPublisherSequence and StreamStats on any node; here only the
// owner knows a publisher's last sequence or the stream's last chunk, so a
// non-owner forwards the question over one OwnerLink in question mode
// (owner_link.h) and passes the owner's answer back — a deduplicating
// publisher can be declared through whichever node a client reached first.
//
// Never for a question that came from another strata node (its product is
// kPeerProduct): two nodes whose views disagree for a moment, each
// thinking the other owns the stream, would pass it back and forth.
//
// Thread safety: the session's strand.
#pragma once

#include <functional>
#include <string>

#include "common/bytes.h"
#include "common/result.h"
#include "proto/dispatch.h"
#include "server/handshake_room.h"
#include "server/room_services.h"
#include "server/session.h"

namespace strata::server {

class OwnerAsker {
 public:
  OwnerAsker(Session& session, ReplicaSource& replicas, const HandshakeRoom& handshake);

  // Encodes the question with the correlation id the link gives it.
  using Encode = std::function<void(uint32_t correlation_id, Bytes* out)>;
  // The owner's answer as it came (any code), or why it could not be
  // asked or did not answer in time (kOwnerQuestionDeadline).
  using Answer = std::function<void(Result<proto::ServerFrame>)>;

  // Asks `stream`'s owner. `answer` runs once, on the session's strand,
  // unless the connection closed first. False, with nothing asked, when
  // there is no one to ask: not a cluster, no other node owns the stream
  // now, or the question came from a node (the caller answers itself).
  bool ask(const std::string& stream, Encode encode, Answer answer);

  // ask() for one request as the client sent it (its correlation id
  // replaced by the link's): `answer` gets the owner's Response, or null
  // when the owner could not be asked or did not answer in time.
  template <class Request, class Response>
  bool forward(const std::string& stream, const Request& request,
               std::function<void(const Response*)> answer) {
    return ask(
        stream,
        [request](uint32_t correlation_id, Bytes* out) {
          Request q = request;
          q.correlation_id = correlation_id;
          proto::encode(q, out);
        },
        [answer = std::move(answer)](Result<proto::ServerFrame> a) {
          answer(a.ok() ? std::get_if<Response>(&*a) : nullptr);
        });
  }

 private:
  Session& session_;
  ReplicaSource& replicas_;
  const HandshakeRoom& handshake_;
};

}  // namespace strata::server
