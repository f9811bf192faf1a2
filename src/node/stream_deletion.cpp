#include "node/stream_deletion.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/clock.h"
#include "common/overloaded.h"
#include "common/stream_name.h"

namespace strata::node {

namespace {

uint64_t seed_of(const DeletionRunOptions& o, const std::string& stream) {
  if (o.seed != 0) return o.seed;
  return uint64_t(system_clock().now_ms()) ^ std::hash<std::string>{}(stream);
}

}  // namespace

StreamDeletion::StreamDeletion(std::shared_ptr<asio::io_context> io, TaskContext tasks,
                               DeletionTargets targets, DeletionRunOptions options, Done done)
    : io_(std::move(io)),
      tasks_(std::move(tasks)),
      targets_(std::move(targets)),
      opts_(options),
      done_(std::move(done)),
      strand_(asio::make_strand(*io_)),
      timer_(strand_),
      core_(targets_.stream, opts_.core, seed_of(opts_, targets_.stream)) {}

std::shared_ptr<StreamDeletion> StreamDeletion::start(std::shared_ptr<asio::io_context> io,
                                                      TaskContext tasks, DeletionTargets targets,
                                                      DeletionRunOptions options, Done done) {
  auto d = std::make_shared<StreamDeletion>(std::move(io), std::move(tasks), std::move(targets),
                                            options, std::move(done));
  asio::post(d->strand_, [d] {
    d->apply(d->core_.start());
    d->publish();
  });
  return d;
}

DeletionProgress StreamDeletion::progress() const {
  std::lock_guard l(mu_);
  return progress_;
}

void StreamDeletion::publish() {
  std::lock_guard l(mu_);
  progress_ = core_.progress();
}

void StreamDeletion::apply(DeletionEffect e) {
  std::visit(Overloaded{[&](RunStep& r) {
                          if (r.delay_ms <= 0) return execute(std::move(r));
                          timer_.expires_after(std::chrono::milliseconds(r.delay_ms));
                          timer_.async_wait([self = shared_from_this(),
                                             r = std::move(r)](const std::error_code& ec) mutable {
                            // Cancelled only when the event loop shuts down:
                            // the node reports the end of the run then.
                            if (ec) return;
                            self->execute(std::move(r));
                          });
                        },
                        [&](DeletionFinished& f) { finish(std::move(f.status)); }},
             e);
}

void StreamDeletion::execute(RunStep r) {
  const DeletionStep step = r.step;
  run_task<StepOutcome>(
      tasks_, strand_, std::chrono::milliseconds(opts_.step_deadline_ms),
      fmt::format("deleting stream {}: {}", targets_.stream, deletion_step_name(step)),
      [t = targets_, step, keys = std::move(r.keys)] { return run_deletion_step(t, step, keys); },
      [self = shared_from_this(), step](TaskOutcome<StepOutcome> o) {
        self->on_outcome(step, std::move(o));
        self->publish();
      });
}

void StreamDeletion::on_outcome(DeletionStep step, TaskOutcome<StepOutcome> o) {
  StepOutcome out;
  switch (o.end) {
    case TaskEnd::completed:
      out = std::move(*o.value);
      break;
    case TaskEnd::deadline:
      out.step = step;
      out.result = StepResult::transient;
      out.error = o.error.to_string();
      break;
    case TaskEnd::threw:
      out.step = step;
      out.result = StepResult::fatal;
      out.error = o.error.to_string();
      break;
    case TaskEnd::cancelled:
      return finish(Error(Errc::cancelled,
                          fmt::format("deleting stream {}: {} was cancelled: {}", targets_.stream,
                                      deletion_step_name(step), o.error.message)));
  }
  if (out.result != StepResult::ok) {
    spdlog::warn("node: deleting stream {}: {} failed ({}): {}", printable_stream(targets_.stream),
                 deletion_step_name(step),
                 out.result == StepResult::transient ? "transient" : "fatal", out.error);
  }
  if (auto next = core_.on(out)) apply(std::move(*next));
}

void StreamDeletion::finish(Status s) {
  if (!done_) return;
  publish();
  auto done = std::move(done_);
  done_ = nullptr;
  done(std::move(s));
}

}  // namespace strata::node
