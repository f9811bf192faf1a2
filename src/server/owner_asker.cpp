#include "server/owner_asker.h"

#include "server/owner_link.h"
#include "server/server_limits.h"

namespace strata::server {

OwnerAsker::OwnerAsker(Session& session, ReplicaSource& replicas, const HandshakeRoom& handshake)
    : session_(session), replicas_(replicas), handshake_(handshake) {}

bool OwnerAsker::ask(const std::string& stream, Encode encode, Answer answer) {
  for (const auto& [k, v] : handshake_.client_properties()) {
    if (k == "product" && v == kPeerProduct) return false;
  }
  auto env = replicas_.replica_env(stream);
  if (!env.ok()) return false;
  const OwnerLookup owner = env->owner();
  if (owner.kind != OwnerLookup::Kind::owned) return false;
  OwnerLinkOptions o = env->link_to(owner);
  o.stream = stream;
  o.setup_deadline = kOwnerQuestionDeadline;
  o.ask = std::move(encode);
  // The link ends in exactly one of these; the connection may have closed
  // by then (its rooms are gone: nothing to answer).
  std::weak_ptr<void> alive = session_.hold();
  auto once = std::make_shared<Answer>(std::move(answer));
  OwnerLinkHandlers h;
  h.answer = [alive, once](const proto::ServerFrame& f) {
    if (auto held = alive.lock()) (*once)(f);
  };
  h.down = [alive, once](const Error& e) {
    if (auto held = alive.lock()) (*once)(e);
  };
  // The link keeps itself alive through its pending operations until it
  // ends (owner_link.h).
  OwnerLink::start(session_.strand(), std::move(o), std::move(h));
  return true;
}

}  // namespace strata::server
