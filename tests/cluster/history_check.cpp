#include "cluster/history_check.h"

#include <map>
#include <set>

namespace strata::test {

std::string body_of(MessageId m) {
  return "p" + std::to_string(m.publisher) + "-" + std::to_string(m.id);
}

bool parse_body(const std::string& body, MessageId* out) {
  size_t dash = body.find('-');
  if (body.size() < 4 || body[0] != 'p' || dash == std::string::npos || dash < 2 ||
      dash + 1 == body.size()) {
    return false;
  }
  for (size_t i = 1; i < body.size(); ++i) {
    if (i != dash && (body[i] < '0' || body[i] > '9')) return false;
  }
  out->publisher = uint32_t(std::stoul(body.substr(1, dash - 1)));
  out->id = std::stoull(body.substr(dash + 1));
  return true;
}

std::string HistoryReport::to_string() const {
  std::string s = std::to_string(published) + " published, " + std::to_string(confirmed) +
                  " confirmed, " + std::to_string(delivered) + " deliveries";
  if (tolerated_duplicates > 0) {
    s += ", " + std::to_string(tolerated_duplicates) + " duplicates of republished messages";
  }
  for (const auto& v : violations) s += "\n  " + v;
  if (more > 0) s += "\n  ... and " + std::to_string(more) + " more violations";
  return s;
}

HistoryReport check_history(const History& h, DuplicatePolicy duplicates, ReadPolicy reads,
                            size_t max_violations) {
  HistoryReport r;
  auto violation = [&](std::string what) {
    if (r.violations.size() < max_violations) {
      r.violations.push_back(std::move(what));
    } else {
      r.more += 1;
    }
  };
  std::set<MessageId> published, republished, confirmed;
  struct Sub {
    std::set<MessageId> seen;
    bool any = false;
    uint64_t last_offset = 0;
  };
  std::map<int, Sub> subs;
  // Rule 6: the message each offset holds, and the subscription that saw
  // it first.
  std::map<uint64_t, std::pair<MessageId, int>> held;
  for (const auto& e : h.events) {
    if (e.kind == HistoryEvent::Kind::publish && !published.insert(e.message).second) {
      republished.insert(e.message);
    }
  }
  for (const auto& e : h.events) {
    switch (e.kind) {
      case HistoryEvent::Kind::publish:
        break;
      case HistoryEvent::Kind::confirm:
        if (!published.count(e.message)) {
          violation("confirmed but never published: " + body_of(e.message));
        }
        confirmed.insert(e.message);
        break;
      case HistoryEvent::Kind::deliver: {
        r.delivered += 1;
        Sub& s = subs[e.subscription];
        const std::string where = " (subscription " + std::to_string(e.subscription) + ", offset " +
                                  std::to_string(e.offset) + ")";
        if (!published.count(e.message)) {
          violation("delivered but never published: " + body_of(e.message) + where);
        }
        if (!s.seen.insert(e.message).second) {
          if (duplicates == DuplicatePolicy::republished && republished.count(e.message)) {
            r.tolerated_duplicates += 1;
          } else {
            violation("delivered twice: " + body_of(e.message) + where);
          }
        }
        if (s.any && e.offset <= s.last_offset) {
          violation("offset not increasing: " + std::to_string(e.offset) + " after " +
                    std::to_string(s.last_offset) + where);
        }
        s.any = true;
        s.last_offset = e.offset;
        if (reads == ReadPolicy::committed_only) {
          auto [it, fresh] = held.try_emplace(e.offset, e.message, e.subscription);
          if (!fresh && it->second.first != e.message) {
            violation("offset " + std::to_string(e.offset) + " holds " + body_of(it->second.first) +
                      " in subscription " + std::to_string(it->second.second) + " but " +
                      body_of(e.message) + " in subscription " + std::to_string(e.subscription));
          }
        }
        break;
      }
    }
  }
  for (int f : h.final_subscriptions) {
    const auto it = subs.find(f);
    size_t missing = 0;
    std::string first_missing;
    for (const auto& m : confirmed) {
      if (it != subs.end() && it->second.seen.count(m)) continue;
      if (missing++ == 0) first_missing = body_of(m);
    }
    if (missing > 0) {
      violation("final subscription " + std::to_string(f) + " misses " + std::to_string(missing) +
                " confirmed messages (first " + first_missing + ")");
    }
  }
  r.published = published.size();
  r.confirmed = confirmed.size();
  return r;
}

std::string describe_subscription(const History& h, int subscription) {
  std::string out;
  bool open = false;
  uint64_t first_offset = 0, last_offset = 0;
  MessageId first, last;
  auto flush = [&] {
    if (!open) return;
    if (!out.empty()) out += ", ";
    out += std::to_string(first_offset) + "-" + std::to_string(last_offset) + ": " +
           body_of(first) + ".." + std::to_string(last.id);
  };
  for (const auto& e : h.events) {
    if (e.kind != HistoryEvent::Kind::deliver || e.subscription != subscription) continue;
    if (open && e.offset == last_offset + 1 && e.message.publisher == last.publisher &&
        e.message.id == last.id + 1) {
      last_offset = e.offset;
      last = e.message;
      continue;
    }
    flush();
    open = true;
    first_offset = last_offset = e.offset;
    first = last = e.message;
  }
  flush();
  return out;
}

}  // namespace strata::test
