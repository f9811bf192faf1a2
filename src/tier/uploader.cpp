// Uploader shell: lifecycle (start, restart, terminate) and the tail (hook
// queue, catch-up reads, fragment assembly, timers). Effects and task
// outcomes are in uploader_effects.cpp.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/stream_name.h"
#include "tier/uploader_impl.h"

namespace strata::tier {

using namespace upload;

std::string_view uploader_state_name(UploaderState s) {
  switch (s) {
    case UploaderState::starting:
      return "starting";
    case UploaderState::running:
      return "running";
    case UploaderState::stalled:
      return "stalled";
    case UploaderState::fenced:
      return "fenced";
    case UploaderState::deleted:
      return "deleted";
    case UploaderState::closed:
      return "closed";
  }
  return "unknown";
}

// ---- public handle ----

Result<std::shared_ptr<Uploader>> Uploader::start(UploaderEnv env, UploaderOptions opts,
                                                  std::shared_ptr<log::StreamLog> log) {
  if (!env.io || !(env.tasks.pool || env.tasks.sim) || !env.tasks.lifetime || !env.governor ||
      !env.store || !env.catalog || !env.cache || !env.clock || !log) {
    return Error(Errc::invalid_argument, "uploader: incomplete environment");
  }
  if (opts.assembly.target_size == 0 || opts.persist_threshold == 0 ||
      opts.request_timeout_ms <= 0 || opts.max_queued_chunks == 0 ||
      opts.catchup_batch_bytes == 0) {
    return Error(Errc::invalid_argument,
                 fmt::format("uploader of stream {}: fragment target size, persist threshold, "
                             "request timeout, queue and batch bounds must be positive",
                             opts.stream));
  }
  STRATA_ASSIGN_OR_RETURN(ObjectKeys keys, ObjectKeys::make(opts.key_prefix, opts.stream));
  static std::atomic<uint64_t> next_owner{1};
  auto impl = std::make_shared<Impl>(std::move(env), std::move(opts), std::move(log),
                                     std::move(keys), next_owner.fetch_add(1));
  impl->begin();
  return std::shared_ptr<Uploader>(new Uploader(std::move(impl)));
}

Uploader::~Uploader() {
  close();
}
void Uploader::on_commit(const log::CommittedChunk& c) {
  impl_->on_commit(c);
}
uint64_t Uploader::persisted_next() const {
  return impl_->persisted_next.load(std::memory_order_acquire);
}
void Uploader::await_persisted(uint64_t offset, std::function<void(Status)> done, bool urgent) {
  impl_->await_persisted(offset, std::move(done), urgent, /*hurry=*/false);
}
void Uploader::await_remote(uint64_t offset, std::function<void(Status)> done) {
  impl_->await_persisted(offset, std::move(done), /*urgent=*/true, /*hurry=*/true);
}
void Uploader::force_cut() {
  impl_->force_cut();
}
void Uploader::request_retention() {
  impl_->request_retention();
}

void Uploader::set_retention(const RetentionSpec& spec) {
  impl_->set_retention(spec);
}
UploaderStatus Uploader::status() const {
  return impl_->status();
}
UploaderState Uploader::state() const {
  return impl_->state.load(std::memory_order_acquire);
}
void Uploader::close() {
  impl_->close();
}

// ---- Impl: construction and entry points ----

Uploader::Impl::Impl(UploaderEnv env, UploaderOptions opts, std::shared_ptr<log::StreamLog> log,
                     ObjectKeys keys, uint64_t owner)
    : env_(std::move(env)),
      opts_(std::move(opts)),
      log_(std::move(log)),
      keys_(std::move(keys)),
      owner_(owner),
      rng_(opts_.random_seed ? opts_.random_seed
                             : uint64_t(env_.clock->now_ms()) * 2654435761u ^ owner_),
      strand_(asio::make_strand(*env_.io)),
      wake_(strand_, env_.tasks.sim) {
  st_.stream = opts_.stream;
}

void Uploader::Impl::begin() {
  on_strand([this] {
    st_.restarts += 1;
    if (opts_.adopt_epoch) {
      epoch_ = *opts_.adopt_epoch;
      adopting_ = true;
      load(false);
    } else {
      load(opts_.take_over);
    }
    publish_status();
  });
}

void Uploader::Impl::on_commit(const log::CommittedChunk& c) {
  bool post = false;
  {
    std::lock_guard l(tail_mu_);
    if (overflow_) return;  // the catch-up read will find it in the log
    if (live_.size() >= opts_.max_queued_chunks) {
      // Uploads are far behind: stop queueing, read the log later instead.
      overflow_ = true;
      live_.clear();
    } else {
      live_.push_back(LiveChunk{c});
    }
    if (!drain_posted_) {
      drain_posted_ = true;
      post = true;
    }
  }
  if (post) {
    on_strand([this] {
      pump();
      publish_status();
    });
  }
}

void Uploader::Impl::await_persisted(uint64_t offset, std::function<void(Status)> done, bool urgent,
                                     bool hurry) {
  on_strand([this, offset, urgent, hurry, done = std::move(done)]() mutable {
    if (closed_ || state.load() == UploaderState::fenced ||
        state.load() == UploaderState::deleted) {
      done(Error(Errc::closed, fmt::format("uploader of stream {} is {}", opts_.stream,
                                           uploader_state_name(state.load()))));
      return;
    }
    if (offset == 0) {
      done(Status::OK());
      return;
    }
    // The core's waiters wait for one offset to be persisted: the last
    // one below `offset`.
    uint64_t id = next_await_++;
    awaits_[id] = Await{offset - 1, std::move(done), urgent, hurry};
    if (core_) feed(AwaitOffset{offset - 1, id, urgent});
    // The pending fragment may now be due sooner.
    if (hurry && core_ && awaits_.count(id)) arm_wake();
    publish_status();
  });
}

void Uploader::Impl::force_cut() {
  // Everything committed before this call, not only what the assembly holds
  // now: while starting or catching up, most of it has not been read yet.
  const uint64_t through = log_->committed_next();
  on_strand([this, through] {
    if (closed_) return;
    cut_through_ = std::max(cut_through_, through);
    if (!core_) return;  // start_core's catch-up feeds the chunks, then cuts
    cut_if_through();
    pump();
    publish_status();
  });
}

void Uploader::Impl::request_retention() {
  on_strand([this] {
    if (core_) feed(RetentionRequested{});
    publish_status();
  });
}

void Uploader::Impl::set_retention(const RetentionSpec& spec) {
  on_strand([this, spec] {
    // A core built later (start, reinitialization) takes it from opts_.
    opts_.retention = spec;
    if (core_) feed(RetentionRequested{spec});
    publish_status();
  });
}

void Uploader::Impl::close() {
  closing_->store(true, std::memory_order_release);
  // Visible at once, also if the event loop stops before the strand runs
  // the rest (a node closing).
  UploaderState cur = state.load();
  if (cur == UploaderState::starting || cur == UploaderState::running ||
      cur == UploaderState::stalled) {
    state.store(UploaderState::closed);
  }
  on_strand([this] {
    if (closed_) return;
    terminate(UploaderState::closed, "closed");
    publish_status();
  });
}

UploaderStatus Uploader::Impl::status() const {
  UploaderStatus s;
  {
    std::lock_guard l(status_mu_);
    s = status_;
  }
  s.state = state.load();
  log::LocalRange r = log_->local_range();
  s.local_first_offset = r.first_offset;
  s.local_next_offset = r.next_offset;
  s.time_to_remote = ttr_.snapshot();
  return s;
}

// ---- lifecycle ----

void Uploader::Impl::load(bool take_over) {
  state.store(UploaderState::starting);
  uint64_t gen = gen_;
  run_task<Result<LoadedState>>(
      env_.tasks, strand_, deadline_ms(4 * opts_.request_timeout_ms),
      fmt::format("loading the persisted state of stream {}", opts_.stream),
      [catalog = env_.catalog, store = env_.store, cache = env_.cache, keys = keys_, take_over,
       closing = closing_]() -> Result<LoadedState> {
        // Still queued when the uploader was closed: its take-over would
        // raise the epoch over the uploader that replaced it.
        if (closing->load(std::memory_order_acquire)) {
          return Error(Errc::closed, "closed before its start-up began");
        }
        return load_stream_state(*catalog, *store, *cache, keys, take_over);
      },
      [self = shared_from_this(), gen, take_over](TaskOutcome<Result<LoadedState>> o) {
        self->on_loaded(gen, take_over, std::move(o));
        self->publish_status();
      });
}

void Uploader::Impl::on_loaded(uint64_t gen, bool take_over, TaskOutcome<Result<LoadedState>> o) {
  if (closed_ || gen != gen_) return;
  Error err;
  if (o.end != TaskEnd::completed) {
    err = o.error;
  } else if (!o.value->ok()) {
    err = o.value->error();
  } else {
    LoadedState st = std::move(*o.value).value();
    if (adopting_ && st.entry.epoch != epoch_) {
      terminate(UploaderState::fenced,
                fmt::format("stream {}: the catalog epoch is {}, not the {} this uploader was "
                            "started under: another writer owns the stream",
                            opts_.stream, st.entry.epoch, epoch_));
      return;
    }
    if (!take_over && !adopting_) {
      // Reinitializing after a refused persist: find out whose write won.
      if (st.entry.epoch > epoch_) {
        terminate(UploaderState::fenced,
                  fmt::format("stream {}: the catalog epoch is now {} (ours is {}): another "
                              "writer owns the stream",
                              opts_.stream, st.entry.epoch, epoch_));
        return;
      }
      if (!st.entry.root_key.empty() && !attempted_roots_.count(st.entry.root_key) &&
          st.entry.root_key != st_.root_key) {
        terminate(UploaderState::fenced,
                  fmt::format("stream {}: the catalog points at root {} which this uploader did "
                              "not write (epoch {}): another writer with the same epoch",
                              opts_.stream, st.entry.root_key, epoch_));
        return;
      }
    }
    start_failures_ = 0;
    note_success();
    start_core(std::move(st));
    return;
  }
  start_failures_ += 1;
  note_failure("start", err.to_string());
  int64_t delay =
      err.code == Errc::conflict ? 0 : backoff_ms(opts_.start_backoff, start_failures_, rng_);
  warn_repeated(fmt::format("start attempt {} failed: {}; retrying in {} ms", start_failures_,
                            err.to_string(), delay));
  retry_later(delay, [this, gen, take_over] {
    if (!closed_ && gen == gen_) load(take_over);
  });
}

void Uploader::Impl::start_core(LoadedState st) {
  epoch_ = st.entry.epoch;
  adopting_ = false;
  const log::LocalRange local = log_->local_range();
  std::optional<Manifest> m = reconcile_with_local(std::move(st.manifest), st.has_root, local);
  if (!m) return;  // stalled
  auto core = UploaderCore::create(core_config(), *m, st.entry.revision, st.entry.root_key);
  if (!core.ok()) {
    std::string msg = "creating the uploader core: " + core.error().to_string();
    note_failure("start", msg);
    spdlog::error("uploader {}: {}", printable_stream(opts_.stream), msg);
    state.store(UploaderState::stalled);
    return;
  }
  core_.emplace(std::move(core).value());
  asm_.emplace(opts_.assembly, m->next_offset);
  catching_up_ = true;
  tail_.reset();
  backlog_.clear();
  st_.epoch = epoch_;
  st_.revision = st.entry.revision;
  st_.root_key = st.entry.root_key;
  st_.remote_first_offset = m->first_offset;
  st_.remote_next_offset = m->next_offset;
  st_.remote_bytes = m->total_size;
  // The readers' manifest before the boundary local retention deletes
  // below (as after a persist: see UploaderCore's persist completion).
  (void)env_.cache->sync(opts_.stream,
                         CachedManifest{core_->persisted_manifest(), epoch_, st.entry.revision});
  persisted_next.store(m->next_offset, std::memory_order_release);
  state.store(UploaderState::running);
  spdlog::info("uploader {}: running at epoch {} revision {}, remote [{}, {}), local [{}, {})",
               printable_stream(opts_.stream), epoch_, st.entry.revision, m->first_offset,
               m->next_offset, local.first_offset, local.next_offset);
  if (opts_.on_running) opts_.on_running(epoch_);
  // Waiters registered while starting (or before a restart) go to this core.
  // (A reply may come at once and erase from awaits_: iterate a copy.)
  std::vector<AwaitOffset> waiting;
  for (auto& [id, a] : awaits_) waiting.push_back(AwaitOffset{a.offset, id, a.urgent});
  for (const AwaitOffset& w : waiting) feed(w);
  pump();
}

std::optional<Manifest> Uploader::Impl::reconcile_with_local(Manifest m, bool has_root,
                                                             const log::LocalRange& local) {
  if (!has_root) {
    // Nothing uploaded yet: the remote tier starts where the local log does.
    return Manifest::empty_at(local.first_offset);
  }
  if (m.next_offset < local.first_offset) {
    st_.gaps += 1;
    spdlog::error(
        "uploader {}: the remote tier ends at offset {} but the local log starts at {}: offsets "
        "[{}, {}) exist in neither tier (a gap). The remote tier restarts at {}; the objects of "
        "its old range are no longer referenced and are left for gc",
        opts_.stream, m.next_offset, local.first_offset, m.next_offset, local.first_offset,
        local.first_offset);
    return Manifest::empty_at(local.first_offset);
  }
  if (m.next_offset > local.next_offset) {
    st_.remote_ahead += 1;
    std::string msg = fmt::format(
        "stream {}: the remote tier holds offsets up to {} but the local log ends at {}: local "
        "data was lost. Uploading is stalled until the local log is moved forward to {} (new "
        "appends must not reuse offsets the remote tier already holds)",
        opts_.stream, m.next_offset, local.next_offset, m.next_offset);
    spdlog::error("uploader {}", msg);
    note_failure("remote_ahead", msg);
    state.store(UploaderState::stalled);
    return std::nullopt;
  }
  return m;
}

UploaderConfig Uploader::Impl::core_config() {
  UploaderConfig cfg;
  cfg.stream = opts_.stream;
  cfg.key_prefix = opts_.key_prefix;
  cfg.epoch = epoch_;
  cfg.persist_threshold = opts_.persist_threshold;
  cfg.persist_interval_ms = opts_.persist_interval_ms;
  cfg.transient_backoff = opts_.transient_backoff;
  cfg.fatal_backoff = opts_.fatal_backoff;
  cfg.transfer_deadline_ms = 4 * opts_.request_timeout_ms;
  cfg.group_upload_deadline_ms = 2 * opts_.request_timeout_ms;
  cfg.persist_deadline_ms = 2 * opts_.request_timeout_ms;
  cfg.retention_deadline_ms = 4 * opts_.request_timeout_ms;
  cfg.rebalance = opts_.rebalance;
  cfg.retention = opts_.retention;
  cfg.max_unpersisted_fragments = opts_.max_unpersisted_fragments;
  cfg.random_seed = rng_.next();
  return cfg;
}

void Uploader::Impl::restart(std::string reason) {
  spdlog::warn("uploader {}: reinitializing: {}", printable_stream(opts_.stream), reason);
  note_failure("reinitialize", reason);
  end_generation();
  env_.cache->invalidate(opts_.stream);
  st_.restarts += 1;
  bool fenced = fenced_hint_;
  fenced_hint_ = false;
  if (fenced) {
    terminate(
        UploaderState::fenced,
        fmt::format("stream {}: {}: another writer holds a higher epoch", opts_.stream, reason));
    return;
  }
  load(/*take_over=*/false);
}

void Uploader::Impl::terminate(UploaderState s, std::string reason) {
  // close() marks the state at once; a stop found on the strand after it is
  // not reported (the owner has let the uploader go already).
  const bool closing = state.load() == UploaderState::closed;
  if (s != UploaderState::closed) {
    spdlog::warn("uploader {}: stopping ({}): {}", printable_stream(opts_.stream),
                 uploader_state_name(s), reason);
    note_failure(std::string(uploader_state_name(s)), reason);
  }
  closed_ = true;
  state.store(s);
  end_generation();
  for (auto& [id, t] : timers_) t->cancel();
  timers_.clear();
  {
    std::lock_guard l(tail_mu_);
    live_.clear();
  }
  auto awaits = std::move(awaits_);
  awaits_.clear();
  for (auto& [id, a] : awaits) {
    a.done(Error(Errc::closed, fmt::format("uploader of stream {} stopped ({}): {}", opts_.stream,
                                           uploader_state_name(s), reason)));
  }
  if (s != UploaderState::closed && !closing && opts_.on_stopped) opts_.on_stopped(s, reason);
}

void Uploader::Impl::end_generation() {
  gen_ += 1;
  core_.reset();
  asm_.reset();
  plans_.clear();
  held_cut_.reset();
  backlog_.clear();
  tail_.reset();
  catching_up_ = true;
  catchup_running_ = false;
  ttr_pending_.clear();
  core_timer_at_.reset();
  wake_.cancel();
  env_.governor->cancel(owner_);
}

void Uploader::Impl::retry_later(int64_t delay_ms, std::function<void()> fn) {
  auto t = std::make_shared<ShellTimer>(strand_, env_.tasks.sim);
  uint64_t id = next_timer_++;
  timers_[id] = t;
  t->expires_after(std::chrono::milliseconds(std::max<int64_t>(0, delay_ms)));
  t->async_wait([self = shared_from_this(), id, fn = std::move(fn)](const std::error_code& ec) {
    self->timers_.erase(id);
    if (ec || self->closed_) return;
    fn();
    self->publish_status();
  });
}

// ---- tail ----

void Uploader::Impl::pump() {
  if (!core_ || closed_ || state.load() != UploaderState::running) return;
  // Iterative: each pass either makes progress or returns.
  for (;;) {
    if (held_cut_) {
      if (!core_->accepts_cuts()) return;
      FragmentPlan p = std::move(*held_cut_);
      held_cut_.reset();
      cut(std::move(p));
      if (!core_ || held_cut_) return;
      cut_if_through();
      if (!core_ || held_cut_) return;
    }
    if (catching_up_) {
      start_catchup();
      return;
    }
    bool overflow = false;
    {
      std::lock_guard l(tail_mu_);
      for (auto& c : live_) backlog_.push_back(c);
      live_.clear();
      overflow = overflow_;
      overflow_ = false;
      drain_posted_ = false;
    }
    if (overflow) {
      st_.queue_overflows += 1;
      backlog_.clear();
      catching_up_ = true;
      continue;
    }
    while (!backlog_.empty()) {
      LiveChunk c = backlog_.front();
      if (!feed_chunk(c.chunk)) break;
      backlog_.pop_front();
      if (!core_) return;
    }
    if (!catching_up_) break;
  }
  arm_wake();
}

bool Uploader::Impl::feed_chunk(const log::CommittedChunk& c) {
  uint64_t next = *asm_->next_offset();
  if (c.header.first_offset < next) return true;  // already fed (catch-up overlap)
  if (c.header.first_offset > next) {
    // Chunks between `next` and this one never reached the queue: read them
    // from the log.
    catching_up_ = true;
    backlog_.clear();
    return false;
  }
  if (held_cut_) return false;
  update_hurry();
  auto r = asm_->add(c, now());
  if (!r.ok()) {
    std::string msg = "fragment assembly refused a chunk: " + r.error().to_string();
    note_failure("assembly", msg);
    spdlog::error("uploader {}: {}", printable_stream(opts_.stream), msg);
    catching_up_ = true;
    backlog_.clear();
    return false;
  }
  if (*r) cut(std::move(**r));
  cut_if_through();
  return !held_cut_;
}

void Uploader::Impl::cut_if_through() {
  if (cut_through_ == 0 || !core_ || held_cut_ || *asm_->next_offset() < cut_through_) return;
  cut_through_ = 0;
  if (auto plan = asm_->cut()) cut(std::move(*plan));
}

void Uploader::Impl::cut(FragmentPlan plan) {
  if (!core_->accepts_cuts()) {
    held_cut_ = std::move(plan);
    return;
  }
  auto p = std::make_shared<const FragmentPlan>(std::move(plan));
  plans_[p->meta.first_offset] = p;
  ttr_pending_.emplace_back(p->meta.next_offset, p->meta.first_ts);
  feed(FragmentCut{p->meta});
}

void Uploader::Impl::start_catchup() {
  if (catchup_running_ || !core_ || held_cut_) return;
  uint64_t from = *asm_->next_offset();
  catchup_running_ = true;
  st_.catchup_reads += 1;
  st_.catching_up = true;
  std::shared_ptr<log::ChunkWalk> tail = (tail_ && tail_->next_offset() == from) ? tail_ : nullptr;
  tail_.reset();  // the job owns it while it runs
  run_task<CatchUpRead>(
      env_.tasks, strand_, deadline_ms(4 * opts_.request_timeout_ms),
      fmt::format("reading stream {} from offset {}", opts_.stream, from),
      [log = log_, tail, from, max = opts_.catchup_batch_bytes]() mutable -> CatchUpRead {
        if (!tail) {
          auto t = log->walk_chunks(from);
          if (!t.ok()) return CatchUpRead{nullptr, t.error()};
          tail = std::move(t).value();
        }
        auto b = tail->next(max);
        return CatchUpRead{tail, std::move(b)};
      },
      [self = shared_from_this(), gen = gen_, from](TaskOutcome<CatchUpRead> o) {
        if (self->closed_ || gen != self->gen_) return;
        self->on_catchup_read(from, std::move(o));
        self->publish_status();
      });
}

void Uploader::Impl::on_catchup_read(uint64_t from, TaskOutcome<CatchUpRead> o) {
  catchup_running_ = false;
  std::string failure;
  if (o.end != TaskEnd::completed) {
    failure = o.error.to_string();
  } else if (!o.value->batch.ok()) {
    failure = o.value->batch.error().to_string();
  }
  if (!failure.empty()) {
    note_failure("catch_up", failure);
    warn_repeated(
        fmt::format("reading the log from offset {} failed: {}; retrying", from, failure));
    retry_later(1000, [this] { pump(); });
    return;
  }
  tail_ = o.value->tail;
  log::ChunkRun& b = *o.value->batch;
  bool consumed = true;
  for (const log::CommittedChunk& c : b.chunks) {
    if (!feed_chunk(c) || !core_) {
      consumed = false;
      break;
    }
  }
  if (consumed && b.at_end && core_) {
    // Everything committed before now has been read; what commits from here
    // on is in the hook queue.
    catching_up_ = false;
    st_.catching_up = false;
  } else if (!consumed) {
    tail_.reset();
  }
  pump();
}

void Uploader::Impl::update_hurry() {
  if (!core_ || !asm_) return;
  const uint64_t cut = core_->next_cut_offset();
  bool hurry = false;
  for (const auto& [id, a] : awaits_) {
    if (a.hurry && a.offset >= cut) {
      hurry = true;
      break;
    }
  }
  asm_->set_hurry(hurry);
}

void Uploader::Impl::arm_wake() {
  if (!core_) return;
  update_hurry();
  std::optional<int64_t> at = core_timer_at_;
  if (auto d = asm_->deadline()) at = at ? std::min(*at, *d) : *d;
  if (!at) {
    wake_.cancel();
    return;
  }
  int64_t delay = std::max<int64_t>(0, *at - now());
  wake_.expires_after(std::chrono::milliseconds(delay));
  uint64_t gen = gen_;
  wake_.async_wait([self = shared_from_this(), gen](const std::error_code& ec) {
    if (ec || self->closed_ || gen != self->gen_) return;
    self->on_wake();
    self->publish_status();
  });
}

void Uploader::Impl::on_wake() {
  if (!core_) return;
  int64_t t = now();
  update_hurry();
  if (auto plan = asm_->tick(t)) cut(std::move(*plan));
  if (core_ && core_timer_at_ && t >= *core_timer_at_) {
    // The Tick uses the core's wake-up up (it forgets it too): an effect of
    // this Tick sets the next one. Kept, a past time would re-arm the wake
    // timer at once, forever (an idle stream spinning on its strand).
    core_timer_at_.reset();
    feed(Tick{});
  }
  if (core_) {
    pump();
    arm_wake();
  }
}

}  // namespace strata::tier
