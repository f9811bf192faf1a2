#include "node/deletion_steps.h"

#include <fmt/format.h>

#include "node/deletion_marker.h"
#include "objstore/retry_class.h"

namespace strata::node {

namespace {

StepOutcome ok(DeletionStep s) {
  StepOutcome o;
  o.step = s;
  return o;
}

StepOutcome failure(DeletionStep s, objstore::RetryClass c, std::string message) {
  StepOutcome o;
  o.step = s;
  o.result = c == objstore::RetryClass::transient ? StepResult::transient : StepResult::fatal;
  o.error = std::move(message);
  return o;
}

StepOutcome failure(DeletionStep s, const Error& e, std::string_view what) {
  return failure(s, objstore::classify_errc(e.code), fmt::format("{}: {}", what, e.to_string()));
}

}  // namespace

StepOutcome fence_stream(const DeletionTargets& t) {
  const auto s = DeletionStep::fence;
  auto e = t.catalog->get(t.stream);
  if (!e.ok()) {
    if (e.code() == Errc::not_found) return ok(s);
    return failure(s, e.error(), "reading the catalog entry");
  }
  auto r = t.catalog->bump_epoch(t.stream, e->revision, 0);
  if (!r.ok()) return failure(s, r.error(), "raising the catalog epoch");
  if (r->outcome == catalog::PutOutcome::ok || r->outcome == catalog::PutOutcome::not_found) {
    return ok(s);
  }
  // The entry moved between the read and the bump: read it again.
  return failure(s, objstore::RetryClass::transient,
                 fmt::format("raising the catalog epoch at revision {}: {} (revision now {})",
                             e->revision, catalog::outcome_name(r->outcome), r->revision));
}

StepOutcome list_stream_objects(const DeletionTargets& t) {
  const auto s = DeletionStep::list;
  objstore::ListRequest req;
  req.prefix = t.key_prefix;
  req.max_keys = t.list_page_keys;
  auto page = t.store->list(req);
  if (!page.ok()) return failure(s, page.retry(), page.error().to_string());
  StepOutcome o = ok(s);
  for (auto& obj : page->objects) o.keys.push_back(std::move(obj.key));
  return o;
}

StepOutcome remove_stream_objects(const DeletionTargets& t, const std::vector<std::string>& keys) {
  const auto s = DeletionStep::remove_objects;
  auto outcomes = t.store->remove_many(keys);
  StepOutcome o = ok(s);
  const objstore::ObjectError* first = nullptr;
  size_t failed = 0;
  bool fatal = false;
  for (const auto& r : outcomes) {
    if (r.ok()) {
      o.removed += 1;
      continue;
    }
    failed += 1;
    if (!first) first = &*r.error;
    fatal = fatal || r.error->retry == objstore::RetryClass::fatal;
  }
  if (outcomes.size() != keys.size()) {
    return failure(
        s, objstore::RetryClass::transient,
        fmt::format("remove_many answered {} outcomes for {} keys", outcomes.size(), keys.size()));
  }
  if (failed == 0) return o;
  StepOutcome f = failure(
      s, fatal ? objstore::RetryClass::fatal : objstore::RetryClass::transient,
      fmt::format("{} of {} keys not removed; first: {}", failed, keys.size(), first->to_string()));
  f.removed = o.removed;
  return f;
}

StepOutcome remove_local_log(const DeletionTargets& t) {
  const auto s = DeletionStep::remove_local;
  Status r = t.registry->remove(t.stream);
  if (r.ok() || r.code() == Errc::not_found) return ok(s);
  return failure(s, r.error(),
                 fmt::format("removing the local log {}", t.registry->dir_of(t.stream)));
}

StepOutcome remove_catalog_entry(const DeletionTargets& t) {
  const auto s = DeletionStep::remove_catalog;
  auto e = t.catalog->get(t.stream);
  if (!e.ok()) {
    if (e.code() == Errc::not_found) return ok(s);
    return failure(s, e.error(), "reading the catalog entry");
  }
  auto r = t.catalog->remove(t.stream, e->revision);
  if (!r.ok()) return failure(s, r.error(), "removing the catalog entry");
  if (r->outcome == catalog::PutOutcome::ok || r->outcome == catalog::PutOutcome::not_found) {
    return ok(s);
  }
  return failure(s, objstore::RetryClass::transient,
                 fmt::format("removing the catalog entry at revision {}: {} (revision now {})",
                             e->revision, catalog::outcome_name(r->outcome), r->revision));
}

StepOutcome remove_marker_step(const DeletionTargets& t) {
  const auto s = DeletionStep::remove_marker;
  // The cache may have been filled again after the deletion began (a
  // start-up load of the uploader that finished late): only now is nothing
  // left to fill it.
  t.cache->erase(t.stream);
  Status r = remove_deletion_marker(*t.fs, t.marker_dir, t.stream);
  if (!r.ok()) return failure(s, r.error(), "removing the deletion marker");
  return ok(s);
}

StepOutcome run_deletion_step(const DeletionTargets& t, DeletionStep step,
                              const std::vector<std::string>& keys) {
  switch (step) {
    case DeletionStep::fence:
      return fence_stream(t);
    case DeletionStep::list:
      return list_stream_objects(t);
    case DeletionStep::remove_objects:
      return remove_stream_objects(t, keys);
    case DeletionStep::remove_local:
      return remove_local_log(t);
    case DeletionStep::remove_catalog:
      return remove_catalog_entry(t);
    case DeletionStep::remove_marker:
      return remove_marker_step(t);
  }
  return failure(step, objstore::RetryClass::fatal, "unknown step");
}

}  // namespace strata::node
