// VhostNames: the streams of one connection as its client names them and as
// the node stores them (common/stream_name.h: a vhost other than "/" keeps
// its streams and super streams under "vhost\nname").
//
// The connection translates at its edge, so that no room, no stream and no
// stored file ever holds a name of the wrong vhost: every stream or super
// stream name in a client's frame becomes a stored name before a room sees
// it (qualify), and every stored name a room sends back becomes the
// client's again (client_name). A client of one vhost therefore cannot
// name another's streams: its names all land in its own vhost.
//
// Two cases on top of that:
//   - A client's name holding a line feed (RabbitMQ would strip it; strata
//     refuses such names, common/stream_name.h) could otherwise read as a
//     qualified name from "/". It is kept with the separator in front,
//     which no stored name has: lookups find nothing, and a create is
//     refused by validate_stream_name naming the byte.
//   - The cluster's own links (a node's login to its peers as
//     cluster.peer_user, in the vhost "/": replica copies, replica reads,
//     questions to an owner) name every vhost's streams by their stored
//     names, which pass as they are.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "proto/dispatch.h"

namespace strata::server {

class VhostNames {
 public:
  // `vhost`: the connection's (viewed: it outlives this value); `peer_link`:
  // the cluster's own login (meaningful in "/" only).
  VhostNames(std::string_view vhost, bool peer_link)
      : vhost_(vhost), raw_(peer_link && vhost == "/") {}

  // The stored name of a client's stream or super stream name.
  std::string stored(std::string_view client) const;
  // Every stream and super stream name of a client's frame, stored.
  void qualify(proto::ClientFrame* frame) const;
  // The client's name of a stored name of its vhost; nullopt for a stored
  // name of another vhost (which only a peer link can name).
  std::optional<std::string> client_name(std::string_view stored) const;
  // client_name, or the stored name as it is (a peer link's view).
  std::string shown(std::string_view stored) const;

 private:
  std::string_view vhost_;
  bool raw_;
};

}  // namespace strata::server
