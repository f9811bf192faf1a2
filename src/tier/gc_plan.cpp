#include "tier/gc_plan.h"

namespace strata::tier {

std::string_view gc_verdict_name(GcVerdict v) {
  switch (v) {
    case GcVerdict::candidate:
      return "candidate";
    case GcVerdict::unparsable:
      return "unparsable";
    case GcVerdict::no_time:
      return "no_time";
    case GcVerdict::referenced:
      return "referenced";
    case GcVerdict::unknown_tree:
      return "unknown_tree";
    case GcVerdict::young:
      return "young";
    case GcVerdict::pending_fragment:
      return "pending_fragment";
    case GcVerdict::pending_meta:
      return "pending_meta";
    case GcVerdict::entry_changed:
      return "entry_changed";
  }
  return "unknown";
}

std::optional<NodeKey> parse_node_key(std::string_view prefix, std::string_view key) {
  std::string_view rest = key;
  if (!prefix.empty()) {
    if (rest.size() <= prefix.size() || rest.substr(0, prefix.size()) != prefix ||
        rest[prefix.size()] != '/') {
      return std::nullopt;
    }
    rest.remove_prefix(prefix.size() + 1);
  }
  // <hash8>/<component>/...
  size_t slash = rest.find('/');
  if (slash != 8) return std::nullopt;
  rest.remove_prefix(9);
  slash = rest.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  std::string component(rest.substr(0, slash));
  auto keys = ObjectKeys::of_component(prefix, component);
  if (!keys.ok()) return std::nullopt;
  // The full parse also checks the hash segment is the component's.
  auto parsed = keys->parse(key);
  if (!parsed.ok()) return std::nullopt;
  return NodeKey{std::move(component), *parsed};
}

GcVerdict gc_verdict(const NodeKey& key, const objstore::ObjectInfo& o, const GcStream& s,
                     int64_t now_ms, int64_t grace_ms) {
  if (!o.last_modified_ms) return GcVerdict::no_time;
  if (s.entry && s.referenced.count(o.key)) return GcVerdict::referenced;
  if (s.entry && !s.exact) return GcVerdict::unknown_tree;
  if (*o.last_modified_ms > now_ms - grace_ms) return GcVerdict::young;
  if (!s.entry) return GcVerdict::candidate;
  const ParsedKey& p = key.parsed;
  if (p.type == ObjectType::fragment) {
    if (p.epoch >= s.entry->epoch && p.first_offset >= s.next_offset) {
      return GcVerdict::pending_fragment;
    }
    return GcVerdict::candidate;
  }
  if (s.entry->root_key.empty() || !s.root_last_modified_ms ||
      *o.last_modified_ms >= *s.root_last_modified_ms - grace_ms) {
    return GcVerdict::pending_meta;
  }
  return GcVerdict::candidate;
}

uint64_t GcPlan::count(GcVerdict v) const {
  uint64_t n = 0;
  for (const auto& [stream, by_verdict] : counts) {
    if (auto it = by_verdict.find(v); it != by_verdict.end()) n += it->second;
  }
  return n;
}

uint64_t GcPlan::candidate_bytes() const {
  uint64_t n = 0;
  for (const auto& c : candidates) n += c.size;
  return n;
}

GcPlan plan_gc(const std::vector<objstore::ObjectInfo>& listing, std::string_view prefix,
               const std::map<std::string, GcStream>& streams, int64_t now_ms, int64_t grace_ms) {
  static const GcStream kAbsent;
  GcPlan plan;
  for (const auto& o : listing) {
    GcObject g{o.key, "", o.size, std::nullopt, GcVerdict::unparsable};
    if (o.last_modified_ms) g.age_ms = now_ms - *o.last_modified_ms;
    if (auto k = parse_node_key(prefix, o.key)) {
      g.component = k->component;
      auto it = streams.find(k->component);
      g.verdict = gc_verdict(*k, o, it == streams.end() ? kAbsent : it->second, now_ms, grace_ms);
    }
    plan.counts[g.component][g.verdict] += 1;
    if (g.verdict == GcVerdict::candidate) {
      plan.candidates.push_back(std::move(g));
    } else if (g.verdict != GcVerdict::referenced) {
      plan.kept.push_back(std::move(g));
    }
  }
  return plan;
}

std::set<std::string> drop_changed(GcPlan& plan, const std::map<std::string, GcStream>& streams,
                                   const std::map<std::string, catalog::StreamEntry>& now) {
  auto changed = [&](const std::string& component) {
    auto was = streams.find(component);
    auto is = now.find(component);
    bool had = was != streams.end() && was->second.entry.has_value();
    bool has = is != now.end();
    if (had != has) return true;
    return had && was->second.entry->revision != is->second.revision;
  };
  std::set<std::string> dropped;
  std::vector<GcObject> keep;
  for (auto& c : plan.candidates) {
    if (changed(c.component)) {
      dropped.insert(c.component);
      auto& counts = plan.counts[c.component];
      counts[GcVerdict::candidate] -= 1;
      counts[GcVerdict::entry_changed] += 1;
      c.verdict = GcVerdict::entry_changed;
      plan.skipped.push_back(std::move(c));
    } else {
      keep.push_back(std::move(c));
    }
  }
  plan.candidates = std::move(keep);
  return dropped;
}

}  // namespace strata::tier
