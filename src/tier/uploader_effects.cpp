// Uploader shell: feeding the core, running its effects, and turning every
// task outcome back into exactly one core event.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/overloaded.h"
#include "common/stream_name.h"
#include "tier/uploader_impl.h"

namespace strata::tier {

using namespace upload;

void Uploader::Impl::note_failure(const std::string& cls, const std::string& message) {
  st_.failures_by_class[cls] += 1;
  st_.last_error = message;
  st_.consecutive_failures += 1;
}

void Uploader::Impl::note_success() {
  st_.consecutive_failures = 0;
  if (uint64_t held = warnings_.reset()) {
    spdlog::warn("uploader {}: requests succeed again ({} more failure warnings were held back)",
                 printable_stream(opts_.stream), held);
  }
}

void Uploader::Impl::warn_repeated(const std::string& message) {
  uint64_t held = 0;
  if (!warnings_.admit(now(), &held)) return;
  if (held == 0) {
    spdlog::warn("uploader {}: {}", printable_stream(opts_.stream), message);
  } else {
    spdlog::warn("uploader {}: {} ({} more like it held back over the last {} s)",
                 printable_stream(opts_.stream), message, held, kRepeatedWarningMs / 1000);
  }
}

void Uploader::Impl::publish_status() {
  if (core_) {
    st_.core = core_->metrics();
    st_.last_persist_ms = st_.core.last_persist_ts_ms;
  }
  if (asm_) {
    st_.assembly_bytes = asm_->pending_bytes();
    st_.assembly_chunks = asm_->pending_chunks();
  }
  std::lock_guard l(status_mu_);
  status_ = st_;
}

void Uploader::Impl::feed(const Event& e) {
  if (!core_ || closed_) return;
  auto r = core_->on(e, now());
  if (!r.ok()) {
    // The core refused the event (a result it never issued, a malformed
    // cut): nothing changed. A bug somewhere, and an operator should see it.
    std::string msg = fmt::format("core refused {}: {}", event_name(e), r.error().to_string());
    note_failure("core", msg);
    spdlog::error("uploader {}: {}", printable_stream(opts_.stream), msg);
    return;
  }
  execute(std::move(r).value());
  // Plans of fragments applied to the live manifest are no longer needed
  // (no retry can ask for them again).
  if (core_) {
    uint64_t applied = core_->live_manifest().next_offset;
    while (!plans_.empty() && plans_.begin()->second->meta.next_offset <= applied) {
      plans_.erase(plans_.begin());
    }
  }
}

void Uploader::Impl::execute(Effects effects) {
  // A Reinitialize or Stop ends this core; the waiters it fails are kept
  // for the next core when it is only a reinitialize.
  bool reinit = false;
  for (const Effect& e : effects) reinit = reinit || std::holds_alternative<Reinitialize>(e);
  std::optional<std::string> restart_reason, stop_reason;
  for (Effect& e : effects) {
    std::visit(
        Overloaded{
            [&](SubmitTransfer& t) { submit_transfer(t); },
            [&](UploadGroup& g) { upload_group(g); },
            [&](StartPersist& p) { start_persist(p); },
            [&](Broadcast& b) {
              if (Status s = env_.cache->apply(opts_.stream, b.batch); !s.ok()) {
                spdlog::warn("uploader {}: {}; syncing the full manifest",
                             printable_stream(opts_.stream), s.error().message);
                (void)env_.cache->sync(opts_.stream, CachedManifest{core_->persisted_manifest(),
                                                                    epoch_, core_->revision()});
              }
            },
            [&](EvaluateRetention& r) { evaluate_retention(r); },
            [&](DeleteObjects& d) { delete_later(d); },
            [&](UpdateLocalRetention& u) { update_local_retention(u); },
            [&](ReplyWaiters& w) {
              if (!(reinit && !w.status.ok())) reply_waiters(w);
            },
            [&](SetTimer& s) {
              core_timer_at_ = s.at_ms;
              arm_wake();
            },
            [&](CancelTimer&) {
              core_timer_at_.reset();
              arm_wake();
            },
            [&](Report& r) {
              note_failure("report", r.error.to_string());
              spdlog::warn("uploader {}: {}", printable_stream(opts_.stream), r.error.to_string());
            },
            [&](Reinitialize& r) { restart_reason = r.reason; },
            [&](Stop& s) { stop_reason = s.reason; },
        },
        e);
  }
  if (stop_reason) {
    terminate(UploaderState::deleted, *stop_reason);
  } else if (restart_reason) {
    restart(*restart_reason);
  }
}

// ---- transfers ----

void Uploader::Impl::submit_transfer(const SubmitTransfer& t) {
  auto go = [this, t, gen = gen_] {
    if (closed_ || gen != gen_) return;
    std::weak_ptr<Impl> w = weak_from_this();
    env_.governor->request(owner_, t.meta.size, [w, t, gen](Governor::Permit p) {
      auto self = w.lock();
      if (!self) return;  // the permit goes back as it is destroyed
      auto permit = std::make_shared<Governor::Permit>(std::move(p));
      asio::post(self->strand_, [self, t, gen, permit] {
        self->start_transfer(t, gen, permit);
        self->publish_status();
      });
    });
  };
  if (t.delay_ms > 0) {
    retry_later(t.delay_ms, go);
  } else {
    go();
  }
}

void Uploader::Impl::start_transfer(const SubmitTransfer& t, uint64_t gen,
                                    std::shared_ptr<Governor::Permit> permit) {
  if (closed_ || gen != gen_) return;  // the permit is released with the last copy
  auto it = plans_.find(t.meta.first_offset);
  if (it == plans_.end()) {
    // Cannot happen while the core and plans agree; fail the transfer so
    // the core's accounting stays right, and say so.
    TransferFailure f{objstore::RetryClass::fatal, 0, "",
                      fmt::format("internal: no fragment plan for offset {}", t.meta.first_offset)};
    feed(TransferFailed{t.ref, t.token, f});
    return;
  }
  std::shared_ptr<const FragmentPlan> plan = it->second;
  run_task<TransferResult>(
      env_.tasks, strand_, deadline_ms(t.deadline_ms), fmt::format("PUT fragment {}", t.key),
      [store = env_.store, log = log_, plan, epoch = epoch_, key = t.key] {
        return put_fragment(*store, *log, *plan, epoch, key);
      },
      [self = shared_from_this(), t, gen, permit](TaskOutcome<TransferResult> o) {
        permit->release();
        if (self->closed_ || gen != self->gen_) return;
        self->on_transfer_done(t, std::move(o));
        self->pump();
        self->publish_status();
      });
}

void Uploader::Impl::on_transfer_done(const SubmitTransfer& t, TaskOutcome<TransferResult> o) {
  switch (o.end) {
    case TaskEnd::completed:
      if (o.value->ok()) {
        st_.fragments_uploaded += 1;
        st_.bytes_uploaded += o.value->value();
        note_success();
        feed(TransferComplete{t.ref, t.token});
      } else {
        const TransferFailure& f = o.value->error();
        bool transient = is_transient(f);
        (transient ? st_.retries_transient : st_.retries_fatal) += 1;
        note_failure(transient ? "transient" : "fatal", f.to_string());
        warn_repeated(fmt::format("{} failed ({}), attempt {}: {}", t.key,
                                  transient ? "transient" : "fatal", t.attempt, f.to_string()));
        feed(TransferFailed{t.ref, t.token, f});
      }
      break;
    case TaskEnd::deadline:
      st_.deadlines += 1;
      st_.retries_transient += 1;
      note_failure("deadline", o.error.message);
      warn_repeated(o.error.message);
      feed(TransferDeadline{t.ref, t.token});
      break;
    case TaskEnd::threw:
    case TaskEnd::cancelled: {
      // A throw is a bug in the job: retried slowly (fatal) and shown as the
      // stalled offset rather than hidden.
      bool threw = o.end == TaskEnd::threw;
      if (threw) st_.task_throws += 1;
      st_.retries_fatal += 1;
      note_failure(std::string(task_end_name(o.end)), o.error.message);
      spdlog::error("uploader {}: {}", printable_stream(opts_.stream), o.error.message);
      TransferFailure f{threw ? objstore::RetryClass::fatal : objstore::RetryClass::transient, 0,
                        "", o.error.message};
      feed(TransferFailed{t.ref, t.token, f});
      break;
    }
  }
}

void Uploader::Impl::upload_group(const UploadGroup& g) {
  uint64_t gen = gen_;
  using R = Result<uint64_t, TransferFailure>;
  run_task<R>(
      env_.tasks, strand_, deadline_ms(g.deadline_ms), fmt::format("PUT group {}", g.key),
      [store = env_.store, group = g.group, key = g.key] { return put_group(*store, *group, key); },
      [self = shared_from_this(), token = g.token, gen](TaskOutcome<R> o) {
        auto& me = *self;
        if (me.closed_ || gen != me.gen_) return;
        if (o.end == TaskEnd::completed && o.value->ok()) {
          me.note_success();
          me.feed(GroupUploadComplete{token});
        } else if (o.end == TaskEnd::deadline) {
          me.note_failure("deadline", o.error.message);
          me.feed(OperationDeadline{token});
        } else {
          TransferFailure f =
              o.end == TaskEnd::completed
                  ? o.value->error()
                  : TransferFailure{objstore::RetryClass::fatal, 0, "", o.error.message};
          me.note_failure(is_transient(f) ? "transient" : "fatal", f.to_string());
          me.feed(GroupUploadFailed{token, f});
        }
        me.pump();
        me.publish_status();
      });
}

// ---- persist ----

void Uploader::Impl::start_persist(const StartPersist& p) {
  uint64_t gen = gen_;
  attempted_roots_.insert(p.root_key);
  run_task<PersistDone>(
      env_.tasks, strand_, deadline_ms(p.deadline_ms),
      fmt::format("persist of stream {} at revision {}", opts_.stream, p.expected_revision),
      [store = env_.store, catalog = env_.catalog, stream = opts_.stream, m = p.manifest,
       epoch = p.epoch, key = p.root_key, rev = p.expected_revision] {
        return persist_root(*store, *catalog, stream, *m, epoch, key, rev);
      },
      [self = shared_from_this(), token = p.token, gen,
       key = p.root_key](TaskOutcome<PersistDone> o) {
        auto& me = *self;
        if (me.closed_ || gen != me.gen_) return;
        if (o.end == TaskEnd::completed && o.value->ok) {
          me.st_.revision = o.value->revision;
          me.st_.root_key = key;
          me.attempted_roots_.clear();
          me.note_success();
          me.feed(PersistComplete{token, o.value->revision});
        } else if (o.end == TaskEnd::deadline) {
          me.note_failure("deadline", o.error.message);
          me.feed(OperationDeadline{token});
        } else if (o.end == TaskEnd::completed) {
          const PersistDone& d = *o.value;
          if (d.fenced) me.fenced_hint_ = true;
          me.note_failure(
              d.error == PersistError::transient ? "persist_transient" : "persist_refused",
              d.message);
          me.warn_repeated("persist failed: " + d.message);
          me.feed(PersistFailed{token, d.error, d.message});
        } else {
          me.note_failure(std::string(task_end_name(o.end)), o.error.message);
          me.feed(PersistFailed{token, PersistError::transient, o.error.message});
        }
        me.pump();
        me.publish_status();
      });
}

// ---- retention ----

void Uploader::Impl::evaluate_retention(const EvaluateRetention& r) {
  uint64_t gen = gen_;
  run_task<Result<RetentionPlan>>(
      env_.tasks, strand_, deadline_ms(r.deadline_ms),
      fmt::format("remote retention of stream {}", opts_.stream),
      [store = env_.store, keys = keys_, m = r.manifest, spec = r.spec, now = r.now_ms] {
        return evaluate_retention_plan(*store, keys, *m, spec, now);
      },
      [self = shared_from_this(), token = r.token, gen](TaskOutcome<Result<RetentionPlan>> o) {
        auto& me = *self;
        if (me.closed_ || gen != me.gen_) return;
        if (o.end == TaskEnd::completed && o.value->ok()) {
          me.feed(RetentionComplete{token, std::move(*o.value).value()});
        } else if (o.end == TaskEnd::deadline) {
          me.note_failure("deadline", o.error.message);
          me.feed(OperationDeadline{token});
        } else {
          std::string msg =
              o.end == TaskEnd::completed ? o.value->error().to_string() : o.error.message;
          me.note_failure("retention", msg);
          me.feed(RetentionFailed{token, msg});
        }
        me.pump();
        me.publish_status();
      });
}

void Uploader::Impl::delete_later(const DeleteObjects& d) {
  if (d.keys.empty()) return;
  // Readers may still hold the manifest that referenced these objects.
  retry_later(opts_.delete_grace_ms, [this, keys = d.keys] {
    run_task<DeleteDone>(
        env_.tasks, strand_, deadline_ms(4 * opts_.request_timeout_ms),
        fmt::format("deleting {} unreferenced objects of stream {}", keys.size(), opts_.stream),
        [store = env_.store, keys] { return delete_objects(*store, keys); },
        [self = shared_from_this(), n = keys.size()](TaskOutcome<DeleteDone> o) {
          auto& me = *self;
          if (o.end != TaskEnd::completed) {
            me.st_.delete_failures += n;
            me.note_failure("delete", o.error.message + " (objects left for gc)");
          } else {
            me.st_.objects_deleted += o.value->deleted;
            me.st_.delete_failures += o.value->failures.size();
            for (const auto& f : o.value->failures) {
              me.note_failure("delete", f + " (left for gc)");
              me.warn_repeated("delete failed: " + f);
            }
          }
          me.publish_status();
        });
  });
}

void Uploader::Impl::update_local_retention(const UpdateLocalRetention& u) {
  persisted_next.store(u.next_offset, std::memory_order_release);
  st_.remote_first_offset = u.first_offset;
  st_.remote_next_offset = u.next_offset;
  st_.revision = u.revision;
  if (core_) st_.remote_bytes = core_->persisted_manifest()->total_size;
  int64_t t = now();
  while (!ttr_pending_.empty() && ttr_pending_.front().first <= u.next_offset) {
    ttr_.record_ms(double(std::max<int64_t>(0, t - ttr_pending_.front().second)));
    ttr_pending_.pop_front();
  }
  // Segments that just became deletable: let the log's retention run (its
  // veto, the tiering hook, reads persisted_next).
  if (!log_->retention().any()) return;
  if (local_retention_running_) {
    local_retention_again_ = true;
    return;
  }
  local_retention_running_ = true;
  run_task<Result<log::RetentionOutcome>>(
      env_.tasks, strand_, deadline_ms(4 * opts_.request_timeout_ms),
      fmt::format("local retention of stream {}", opts_.stream),
      [log = log_] { return log->apply_retention(); },
      [self = shared_from_this()](TaskOutcome<Result<log::RetentionOutcome>> o) {
        auto& me = *self;
        me.local_retention_running_ = false;
        if (o.end == TaskEnd::completed && o.value->ok()) {
          me.st_.local_segments_deleted += (*o.value)->deleted.size();
        } else {
          std::string msg =
              o.end == TaskEnd::completed ? o.value->error().to_string() : o.error.message;
          me.note_failure("local_retention", msg);
        }
        if (me.local_retention_again_ && !me.closed_ && me.core_) {
          me.local_retention_again_ = false;
          UpdateLocalRetention again{me.st_.remote_first_offset, me.st_.remote_next_offset,
                                     me.st_.revision};
          me.update_local_retention(again);
        }
        me.publish_status();
      });
}

void Uploader::Impl::reply_waiters(const ReplyWaiters& w) {
  // A waiter that reads status() next must see what it was told about.
  publish_status();
  for (uint64_t id : w.waiters) {
    auto it = awaits_.find(id);
    if (it == awaits_.end()) continue;
    auto done = std::move(it->second.done);
    awaits_.erase(it);
    done(w.status);
  }
}

}  // namespace strata::tier
