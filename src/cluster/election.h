// Electing the most complete copy: which node takes an ownerless stream
// over when the cluster runs replica copies (cluster.replica_copies). Pure.
//
// While a stream has no owner, every live node stands for it: it posts
// <ns>/candidates/<node>/<stream> on its lease with what its disk holds of
// the stream past the remote tier (node/node.h, Node::local_tail) — the
// epoch of its last chunk and where it ends. The node standing with the
// most takes it over; it keeps that tail (node/stream_open.cpp keeps a
// tail written by the tenure the takeover fences), so a takeover loses
// nothing a surviving copy holds, and a replicated confirm (which waits
// for a majority of copies, server/replica_acks.h) is kept as long as one
// node of that majority lives. The order: the newer epoch first (a tail
// an older tenure left behind loses to any copy of the tenure that
// replaced it, and would be dropped by the takeover anyway), then the
// further end, then the rendezvous rank, so that streams nobody holds a
// tail of go to their first choice as without elections. Who has not stood
// is waited for: the best acquires once every live node stood, or after a
// grace once a majority did (quorum_stood); the runner-up after twice the
// grace, when the best has not acquired and a majority stood besides it.
// Never fewer: a minority's best may lack what a majority confirmed. The
// owner key's
// txn deletes the candidacies (cluster/ownership_effects.cpp); a node that
// still sees its own once the stream has an owner withdraws it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace strata::cluster {

struct Candidacy {
  uint64_t epoch = 0;  // of the last chunk past the remote tier; 0: none
  uint64_t next = 0;   // where that tail ends; 0: nothing past the remote tier
  bool operator==(const Candidacy&) const = default;
};

struct Election {
  std::string best;        // the live node standing with the most; "" if none stood
  std::string runner_up;   // the next best; "" if fewer than two stood
  size_t stood = 0;        // live nodes that stood
  bool all_stood = false;  // every live node has stood
};

// Whether `stood` of `live` nodes is enough to elect without the rest: more
// than half of them. A replicated confirm waits for a majority of the
// stream's nodes, so any majority of them includes one that holds it; with
// fewer, a node that has not stood (slow, or its candidacy not posted yet)
// may be the only one left holding a confirmed message.
bool quorum_stood(size_t stood, size_t live);

// Among the live `nodes`, those in `stood` (node -> candidacy; may be null).
Election elect(const std::string& stream, const std::vector<std::string>& nodes,
               const std::map<std::string, Candidacy>* stood);

// The candidacy's value in etcd, and back (false when malformed).
std::string candidacy_to_json(const Candidacy& c);
bool candidacy_from_json(const std::string& text, Candidacy* out);

}  // namespace strata::cluster
