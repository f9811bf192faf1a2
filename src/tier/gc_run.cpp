#include "tier/gc_run.h"

#include <fmt/format.h>

#include <chrono>
#include <random>
#include <set>
#include <thread>

#include "common/name_component.h"
#include "common/stream_name.h"
#include "tier/tier_limits.h"

namespace strata::tier {

namespace {

GcStream gc_stream_of(const LoadedTree& t) {
  GcStream s;
  s.entry = t.entry;
  s.root_last_modified_ms = t.root_last_modified_ms;
  if (!t.entry) return s;
  const std::string& root_key = t.entry->root_key;
  if (root_key.empty()) {
    s.exact = true;
    return s;
  }
  s.referenced.insert(root_key);
  if (t.root.state != ReadState::ok) {
    s.why_unknown = fmt::format("root {}: {}", root_key, t.root.error);
    return s;
  }
  s.next_offset = t.root.manifest.next_offset;
  for (const auto& g : t.walk.groups) s.referenced.insert(g.key);
  for (const auto& l : t.walk.leaves) {
    if (l.known) s.referenced.insert(l.key);
  }
  s.exact = t.walk.exact();
  if (!s.exact && !t.walk.problems.empty()) {
    const ScrubFinding& p = t.walk.problems.front();
    s.why_unknown = fmt::format("{} {}: {}", finding_name(p.kind), p.key, p.detail);
  }
  return s;
}

// The catalog's entries by their streams' components (GC's key).
std::map<std::string, catalog::StreamEntry> by_component(
    std::vector<catalog::StreamEntry> entries) {
  std::map<std::string, catalog::StreamEntry> m;
  for (auto& e : entries) m.emplace(name_component(e.stream), std::move(e));
  return m;
}

// What the final report shows of one stream (or of the unparsable keys,
// under ""): its last plan.
struct StreamPart {
  std::vector<GcObject> kept;
  std::vector<GcObject> skipped;
  std::map<GcVerdict, uint64_t> counts;
};

class Gc {
 public:
  Gc(objstore::ObjectStore& store, const CatalogSource& catalog, const GcOptions& opts)
      : store_(store), catalog_(catalog), opts_(opts) {}

  Result<GcResult> run() {
    std::string list_prefix = opts_.prefix.empty() ? "" : opts_.prefix + "/";
    say(fmt::format("listing {}", list_prefix.empty() ? "the whole bucket" : list_prefix));
    const int64_t now = opts_.clock->now_ms();
    auto listing = with_transient_retries([&] { return objstore::list_all(store_, list_prefix); });
    if (!listing.ok()) return listing.error().to_error().with_context("listing " + list_prefix);
    out_.listed = listing->size();
    STRATA_ASSIGN_OR_RETURN(auto entries, catalog_.list());
    std::map<std::string, catalog::StreamEntry> first = by_component(std::move(entries));
    learn_names(first);
    std::set<std::string> components;
    for (const auto& o : *listing) {
      if (auto k = parse_node_key(opts_.prefix, o.key)) components.insert(k->component);
    }
    say(fmt::format("listed {} objects of {} streams; reading their manifests", listing->size(),
                    components.size()));
    std::map<std::string, GcStream> streams;
    for (const auto& c : components) {
      auto it = first.find(c);
      std::optional<catalog::StreamEntry> entry;
      if (it != first.end()) entry = it->second;
      STRATA_ASSIGN_OR_RETURN(streams[c], read_stream(std::move(entry)));
    }
    GcPlan plan = plan_gc(*listing, opts_.prefix, streams, now, opts_.grace_ms);
    STRATA_ASSIGN_OR_RETURN(auto again_entries, catalog_.list());
    std::map<std::string, catalog::StreamEntry> again = by_component(std::move(again_entries));
    learn_names(again);
    std::set<std::string> changed = drop_changed(plan, streams, again);
    finish_round(std::move(plan));
    for (int round = 1; round <= opts_.rounds && !changed.empty(); ++round) {
      std::set<std::string> still;
      for (const auto& c : changed) {
        STRATA_ASSIGN_OR_RETURN(bool dropped, replan(c));
        if (dropped) still.insert(c);
      }
      changed = std::move(still);
    }
    for (auto& [name, part] : parts_) {
      out_.kept.insert(out_.kept.end(), part.kept.begin(), part.kept.end());
      out_.skipped.insert(out_.skipped.end(), part.skipped.begin(), part.skipped.end());
      for (auto [v, n] : part.counts) out_.counts[v] += n;
    }
    return std::move(out_);
  }

 private:
  void say(const std::string& line) {
    if (opts_.progress) opts_.progress(line);
  }

  // Remembers the name of every component the catalog holds, for the
  // report and the re-plans.
  void learn_names(const std::map<std::string, catalog::StreamEntry>& entries) {
    for (const auto& [c, e] : entries) out_.names[c] = e.stream;
  }

  Result<GcStream> read_stream(std::optional<catalog::StreamEntry> e) {
    if (!e) return GcStream{};
    const std::string name = e->stream;
    STRATA_ASSIGN_OR_RETURN(auto keys, ObjectKeys::make(opts_.prefix, name));
    STRATA_ASSIGN_OR_RETURN(LoadedTree t, load_tree_from(store_, catalog_, keys, std::move(e)));
    GcStream s = gc_stream_of(t);
    if (!s.exact) out_.unknown_trees[name] = s.why_unknown;
    return s;
  }

  // Plans one stream again on its own. Returns whether its candidates were
  // skipped again. The stream changed between the catalog's two reads, so
  // one of them named it.
  Result<bool> replan(const std::string& component) {
    auto known = out_.names.find(component);
    if (known == out_.names.end()) return true;  // cannot happen; skipped, not deleted
    const std::string name = known->second;
    STRATA_ASSIGN_OR_RETURN(auto keys, ObjectKeys::make(opts_.prefix, name));
    say(fmt::format("stream {} changed while planning; planning it again", printable_name(name)));
    const int64_t now = opts_.clock->now_ms();
    auto listing =
        with_transient_retries([&] { return objstore::list_all(store_, keys.stream_prefix()); });
    if (!listing.ok()) {
      return listing.error().to_error().with_context("listing " + keys.stream_prefix());
    }
    STRATA_ASSIGN_OR_RETURN(auto entry, catalog_.get(name));
    std::map<std::string, GcStream> streams;
    out_.unknown_trees.erase(name);
    STRATA_ASSIGN_OR_RETURN(streams[component], read_stream(std::move(entry)));
    GcPlan plan = plan_gc(*listing, opts_.prefix, streams, now, opts_.grace_ms);
    STRATA_ASSIGN_OR_RETURN(auto again, catalog_.get(name));
    std::map<std::string, catalog::StreamEntry> now_entries;
    if (again) now_entries.emplace(component, std::move(*again));
    bool dropped = !drop_changed(plan, streams, now_entries).empty();
    parts_.erase(component);
    finish_round(std::move(plan));
    return dropped;
  }

  // Deletes the plan's candidates and files the rest by stream.
  void finish_round(GcPlan plan) {
    out_.rounds += 1;
    for (auto& k : plan.kept) parts_[k.component].kept.push_back(std::move(k));
    for (auto& k : plan.skipped) parts_[k.component].skipped.push_back(std::move(k));
    for (auto& [component, counts] : plan.counts) parts_[component].counts = std::move(counts);
    say(fmt::format("{} {} objects ({} bytes)", opts_.dry_run ? "would delete" : "deleting",
                    plan.candidates.size(), plan.candidate_bytes()));
    if (opts_.dry_run) {
      out_.deleted.insert(out_.deleted.end(), plan.candidates.begin(), plan.candidates.end());
      return;
    }
    if (opts_.max_deletes > 0) {
      const uint64_t tried = out_.deleted.size() + out_.failed.size();
      const uint64_t room = opts_.max_deletes > tried ? opts_.max_deletes - tried : 0;
      if (plan.candidates.size() > room) {
        out_.left += plan.candidates.size() - room;
        plan.candidates.resize(room);
      }
    }
    remove(std::move(plan.candidates));
  }

  void remove(std::vector<GcObject> objects) {
    BackoffPolicy backoff = BackoffPolicy::transient();
    backoff.immediate_first = false;
    for (size_t start = 0; start < objects.size(); start += objstore::kMaxDeleteBatch) {
      size_t end = std::min(objects.size(), start + objstore::kMaxDeleteBatch);
      std::vector<GcObject> batch(objects.begin() + long(start), objects.begin() + long(end));
      for (int attempt = 1; !batch.empty(); ++attempt) {
        std::vector<std::string> keys;
        for (const auto& o : batch) keys.push_back(o.key);
        auto outcomes = store_.remove_many(keys);
        std::vector<GcObject> retry;
        for (size_t i = 0; i < batch.size(); ++i) {
          const auto& o = outcomes[i];
          if (o.ok()) {
            out_.deleted.push_back(std::move(batch[i]));
          } else if (o.error->retry == objstore::RetryClass::transient &&
                     attempt < kGcRemoveTries) {
            retry.push_back(std::move(batch[i]));
          } else {
            out_.failed.push_back(GcFailure{std::move(batch[i]), o.error->to_string()});
          }
        }
        batch = std::move(retry);
        if (!batch.empty()) {
          std::this_thread::sleep_for(
              std::chrono::milliseconds(backoff_ms(backoff, attempt, rng_)));
        }
      }
    }
  }

  objstore::ObjectStore& store_;
  const CatalogSource& catalog_;
  const GcOptions& opts_;
  GcResult out_;
  std::map<std::string, StreamPart> parts_;
  Random rng_{uint64_t(std::random_device{}())};
};

}  // namespace

Result<GcResult> run_gc(objstore::ObjectStore& store, const CatalogSource& catalog,
                        const GcOptions& opts) {
  return Gc(store, catalog, opts).run();
}

std::string GcResult::stream_of(const GcObject& o) const {
  if (auto it = names.find(o.component); it != names.end()) return it->second;
  return name_of_component(o.component).value_or(o.component);
}

}  // namespace strata::tier
