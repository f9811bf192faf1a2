#include "raftmeta/meta_change.h"

namespace strata::raftmeta {

FieldMask diff(const ServerMeta& a, const ServerMeta& b) {
  FieldMask m = 0;
  if (a.current_term != b.current_term) m |= kTermBit;
  // The name field is present for both vote forms, the node only for
  // {name, node}.
  const bool a_name = a.voted_for.has_vote();
  const bool b_name = b.voted_for.has_vote();
  if (a_name != b_name || (a_name && a.voted_for.name != b.voted_for.name)) m |= kVoteNameBit;
  const bool a_node = a.voted_for.form == VotedFor::Form::server_id;
  const bool b_node = b.voted_for.form == VotedFor::Form::server_id;
  if (a_node != b_node || (a_node && a.voted_for.node != b.voted_for.node)) m |= kVoteNodeBit;
  if (a.last_applied != b.last_applied) m |= kAppliedBit;
  return m;
}

ServerMeta apply_store(const ServerMeta& cur, Field f, const FieldValue& v) {
  ServerMeta next = cur;
  switch (f) {
    case Field::current_term: {
      const uint64_t term = std::get<uint64_t>(v);
      if (cur.current_term != term) {
        next.current_term = term;
        next.voted_for = VotedFor::none();
      }
      break;
    }
    case Field::voted_for:
      next.voted_for = std::get<VotedFor>(v);
      break;
    case Field::last_applied:
      next.last_applied = std::get<uint64_t>(v);
      break;
  }
  return next;
}

}  // namespace strata::raftmeta
