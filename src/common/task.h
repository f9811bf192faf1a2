// Tasks that always end: a blocking job run on a BlockingPool whose outcome
// comes back to the caller's strand exactly once — its result, its throw,
// its deadline, or its cancellation (the pool dropped it unrun) — whatever
// the job does. This is the shells' answer to the original's hung state
// machines: no flag set when a task starts can stay set forever, because
// the task's end is not left to the job.
//
//   run_task<R>(ctx, strand, deadline, "PUT k", job, done)
//
// - `job` runs on the pool and returns an R (usually a Result). An
//   exception it throws is caught and becomes TaskEnd::threw with the
//   exception's text.
// - When `deadline` passes first, `done` gets TaskEnd::deadline at once; the
//   job is marked abandoned (the pool may add a thread while it still runs)
//   and its late result is dropped here.
// - If the pool drops the job unrun (stop), `done` gets TaskEnd::cancelled.
// - `done` runs on `strand`, once. Callers still tag results with their own
//   generation tokens: a result can sit in the strand's queue while the
//   caller moves on (the cores ignore stale tokens).
//
// run_task must be called on `strand` (the deadline timer is armed and
// cancelled there).
//
// A test may put a simulation in TaskContext::sim (common/task_sim.h): jobs
// and deadlines are then its to run and fire, in an order it chooses.
#pragma once

#include <asio/bind_executor.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>

#include "common/blocking_pool.h"
#include "common/result.h"
#include "common/task_sim.h"

namespace strata {

template <class R>
struct TaskOutcome {
  TaskEnd end = TaskEnd::completed;
  std::optional<R> value;  // set when completed: what the job returned
  // Otherwise, what ended it: internal (threw), timeout (deadline),
  // cancelled (dropped unrun).
  Error error;
};

// Whether the io_context that strands and timers belong to is still
// there. A job that outlives the node (hung past the pool's stop grace)
// must not post to a destroyed io_context, nor be the one to destroy the
// task's timer and strand: its guard (detail::JobGuard) checks this under a
// shared lock, and the node clears it under the exclusive lock before
// destroying the io_context.
struct IoLifetime {
  std::shared_mutex mu;
  bool alive = true;
  void end() {
    std::unique_lock l(mu);
    alive = false;
  }
};

struct TaskContext {
  BlockingPool* pool = nullptr;
  std::shared_ptr<IoLifetime> lifetime;
  // Tests only: a deterministic simulation that runs the jobs and fires the
  // timers instead of `pool` and the steady clock. Null in production.
  TaskSim* sim = nullptr;
};

namespace detail {

template <class T>
struct TaskState : std::enable_shared_from_this<TaskState<T>> {
  TaskState(Strand s, std::shared_ptr<IoLifetime> l, TaskSim* sim, std::string w,
            std::function<void(TaskOutcome<T>)> d)
      : strand(std::move(s)),
        lifetime(std::move(l)),
        what(std::move(w)),
        done(std::move(d)),
        timer(strand, sim) {}

  // The first end wins; later ones (a late result after the deadline, the
  // guard of a job that already reported) are dropped here. The caller
  // holds lifetime->mu shared and has checked `alive`.
  void finish_locked(TaskEnd end, std::optional<T> value, Error error) {
    if (fired.exchange(true, std::memory_order_acq_rel)) return;
    asio::post(strand, [self = this->shared_from_this(), end, v = std::move(value),
                        e = std::move(error)]() mutable {
      self->timer.cancel();
      auto d = std::move(self->done);
      d(TaskOutcome<T>{end, std::move(v), std::move(e)});
    });
  }

  Strand strand;
  std::shared_ptr<IoLifetime> lifetime;
  std::string what;
  std::function<void(TaskOutcome<T>)> done;
  ShellTimer timer;
  BlockingPool::Ticket ticket;
  std::atomic<bool> fired{false};
};

// Owned by the job: reports its end to the task, and if the job is
// destroyed without having run (the pool dropped it), the task ends as
// cancelled. It holds the task only weakly: the TaskState owns a timer and
// a strand of the io_context, and a hung job may outlive the io_context
// (the pool does not wait for abandoned jobs), so the last reference to the
// task must never be the job's. A strong reference is taken only under the
// lifetime's shared lock while the io_context is alive, and dropped before
// the lock (IoLifetime::end takes it exclusively before the io_context goes).
// The deadline timer's pending wait keeps the task alive until it has ended.
template <class T>
struct JobGuard {
  explicit JobGuard(const std::shared_ptr<TaskState<T>>& s)
      : st(s), lifetime(s->lifetime), what(s->what) {}
  ~JobGuard() {
    if (!ran) {
      end(TaskEnd::cancelled, std::nullopt,
          Error(Errc::cancelled, what + ": dropped before it ran (shutting down)"));
    }
  }
  void end(TaskEnd e, std::optional<T> value, Error error) {
    std::shared_lock l(lifetime->mu);
    if (!lifetime->alive) return;
    if (auto s = st.lock()) s->finish_locked(e, std::move(value), std::move(error));
  }
  std::weak_ptr<TaskState<T>> st;
  std::shared_ptr<IoLifetime> lifetime;
  std::string what;
  bool ran = false;
};

}  // namespace detail

template <class T>
void run_task(TaskContext ctx, const Strand& strand, std::chrono::milliseconds deadline,
              std::string what, std::function<T()> job, std::function<void(TaskOutcome<T>)> done) {
  uint64_t sim_task = 0;
  if (ctx.sim) {
    sim_task = ctx.sim->task_started(what);
    done = [sim = ctx.sim, sim_task, d = std::move(done)](TaskOutcome<T> o) {
      sim->task_ended(sim_task, o.end);
      d(std::move(o));
    };
  }
  auto st = std::make_shared<detail::TaskState<T>>(strand, ctx.lifetime, ctx.sim, std::move(what),
                                                   std::move(done));
  auto guard = std::make_shared<detail::JobGuard<T>>(st);
  BlockingPool::Job run = [guard, job = std::move(job)]() mutable {
    guard->ran = true;
    try {
      std::optional<T> r(job());
      guard->end(TaskEnd::completed, std::move(r), Error());
    } catch (const std::exception& e) {
      guard->end(TaskEnd::threw, std::nullopt,
                 Error(Errc::internal, guard->what + ": threw: " + e.what()));
    } catch (...) {
      guard->end(TaskEnd::threw, std::nullopt,
                 Error(Errc::internal, guard->what + ": threw a non-standard exception"));
    }
  };
  guard.reset();
  if (ctx.sim) {
    ctx.sim->post_job(sim_task, std::move(run));
  } else {
    st->ticket = ctx.pool->post(std::move(run));
  }
  st->timer.expires_after(deadline);
  st->timer.async_wait([st, deadline](const std::error_code& ec) {
    if (ec) return;  // cancelled: the task ended first
    st->ticket.abandon();
    std::shared_lock l(st->lifetime->mu);
    if (!st->lifetime->alive) return;
    st->finish_locked(
        TaskEnd::deadline, std::nullopt,
        Error(Errc::timeout, st->what + ": no result within its deadline of " +
                                 std::to_string(deadline.count()) + " ms (abandoned)"));
  });
}

}  // namespace strata
