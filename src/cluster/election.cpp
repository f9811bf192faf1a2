#include "cluster/election.h"

#include <nlohmann/json.hpp>
#include <tuple>

#include "cluster/ownership_core.h"

namespace strata::cluster {

Election elect(const std::string& stream, const std::vector<std::string>& nodes,
               const std::map<std::string, Candidacy>* stood) {
  Election e;
  e.all_stood = !nodes.empty();
  using Rank = std::tuple<uint64_t, uint64_t, uint64_t>;
  Rank best_rank{}, second_rank{};
  // Higher rank first; equal ranks (never, in practice: rendezvous scores
  // differ) to the smaller name.
  auto before = [](const Rank& r, const std::string& n, const Rank& than, const std::string& m) {
    return m.empty() || r > than || (r == than && n < m);
  };
  for (const std::string& n : nodes) {
    const Candidacy* c = nullptr;
    if (stood) {
      if (auto it = stood->find(n); it != stood->end()) c = &it->second;
    }
    if (!c) {
      e.all_stood = false;
      continue;
    }
    e.stood += 1;
    const Rank rank = std::make_tuple(c->epoch, c->next, rendezvous_score(stream, n));
    if (before(rank, n, best_rank, e.best)) {
      e.runner_up = e.best;
      second_rank = best_rank;
      e.best = n;
      best_rank = rank;
    } else if (before(rank, n, second_rank, e.runner_up)) {
      e.runner_up = n;
      second_rank = rank;
    }
  }
  return e;
}

bool quorum_stood(size_t stood, size_t live) {
  return live > 0 && 2 * stood > live;
}

std::string candidacy_to_json(const Candidacy& c) {
  return nlohmann::json{{"epoch", c.epoch}, {"next", c.next}}.dump();
}

bool candidacy_from_json(const std::string& text, Candidacy* out) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return false;
  auto e = j.find("epoch");
  auto n = j.find("next");
  if (e == j.end() || n == j.end() || !e->is_number_unsigned() || !n->is_number_unsigned()) {
    return false;
  }
  out->epoch = e->get<uint64_t>();
  out->next = n->get<uint64_t>();
  return true;
}

}  // namespace strata::cluster
