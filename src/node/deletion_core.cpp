#include "node/deletion_core.h"

#include <fmt/format.h>

namespace strata::node {

std::string_view deletion_step_name(DeletionStep s) {
  switch (s) {
    case DeletionStep::fence:
      return "fence";
    case DeletionStep::list:
      return "list";
    case DeletionStep::remove_objects:
      return "remove_objects";
    case DeletionStep::remove_local:
      return "remove_local";
    case DeletionStep::remove_catalog:
      return "remove_catalog";
    case DeletionStep::remove_marker:
      return "remove_marker";
  }
  return "unknown";
}

DeletionCore::DeletionCore(std::string stream, DeletionCoreOptions options, uint64_t seed)
    : stream_(std::move(stream)), opts_(options), rng_(seed) {}

DeletionEffect DeletionCore::start() {
  started_ = true;
  return run(DeletionStep::fence);
}

DeletionEffect DeletionCore::run(DeletionStep s, std::vector<std::string> keys) {
  p_.step = s;
  return RunStep{s, 0, std::move(keys)};
}

DeletionEffect DeletionCore::finish(Status s) {
  p_.finished = true;
  if (!s.ok() && p_.last_error.empty()) p_.last_error = s.error().message;
  return DeletionFinished{std::move(s)};
}

std::optional<DeletionEffect> DeletionCore::on(const StepOutcome& o) {
  if (!started_ || p_.finished || o.step != p_.step) return std::nullopt;
  if (o.step == DeletionStep::remove_objects) p_.objects_removed += o.removed;
  if (o.result != StepResult::ok) return failed(o);
  // A listing is no progress by itself: a store that lists but never
  // removes must still run out of attempts.
  if (o.step != DeletionStep::list) p_.failures_in_a_row = 0;
  switch (o.step) {
    case DeletionStep::fence:
      return run(DeletionStep::list);
    case DeletionStep::list:
      p_.listings += 1;
      if (o.keys.empty()) return run(DeletionStep::remove_local);
      return run(DeletionStep::remove_objects, o.keys);
    case DeletionStep::remove_objects:
      return run(DeletionStep::list);
    case DeletionStep::remove_local:
      return run(DeletionStep::remove_catalog);
    case DeletionStep::remove_catalog:
      return run(DeletionStep::remove_marker);
    case DeletionStep::remove_marker:
      return finish(Status::OK());
  }
  return finish(Error(Errc::internal, "deletion core: unknown step"));
}

DeletionEffect DeletionCore::failed(const StepOutcome& o) {
  p_.last_error = fmt::format("{}: {}", deletion_step_name(o.step), o.error);
  if (o.result == StepResult::fatal) {
    return finish(
        Error(Errc::fatal, fmt::format("deleting stream {}: {}", stream_, p_.last_error)));
  }
  p_.transient_failures += 1;
  p_.failures_in_a_row += 1;
  if (p_.failures_in_a_row > opts_.max_failures_in_a_row) {
    return finish(Error(Errc::transient,
                        fmt::format("deleting stream {}: gave up after {} transient failures in a "
                                    "row; the last: {}",
                                    stream_, p_.failures_in_a_row, p_.last_error)));
  }
  // What is left after a failed batch removal is whatever the next listing
  // shows, not the batch as it was.
  DeletionStep next = o.step == DeletionStep::remove_objects ? DeletionStep::list : o.step;
  p_.step = next;
  return RunStep{next, tier::backoff_ms(opts_.backoff, p_.failures_in_a_row, rng_), {}};
}

}  // namespace strata::node
