#include "server/stream_appender.h"

#include <spdlog/spdlog.h>

#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>

#include "server/remote_confirms.h"
#include "server/replica_acks.h"
#include "server/server_limits.h"

namespace strata::server {

using proto::ResponseCode;

namespace {
int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A chunk holds at most this many entries (its header counts them in 16 bits).
constexpr size_t kMaxEntries = 65535;

ResponseCode code_for(const Error& e) {
  switch (e.code) {
    // An I/O error (a full disk) fail-stops the log: this append's batches
    // get the error itself, later ones fail_stopped; to the client it is
    // the same stream, unavailable for writing until the node restarts
    // its writer (node/disk_guard.h).
    case Errc::io:
    case Errc::unavailable:
    case Errc::closed:
    case Errc::fail_stopped:
    case Errc::not_found:
      return ResponseCode::stream_not_available;
    case Errc::invalid_argument:
      return ResponseCode::precondition_failed;
    default:
      return ResponseCode::internal_error;
  }
}
}  // namespace

struct StreamAppender::Impl : std::enable_shared_from_this<Impl> {
  Impl(std::shared_ptr<node::StreamHandle> stream, asio::io_context& io, TaskContext tasks,
       AppenderOptions opts);
  void submit(std::weak_ptr<PublishSink> sink, uint8_t publisher_id, const std::string& ref,
              const std::vector<proto::PublishedMessage>& messages, uint64_t bytes);
  std::optional<uint64_t> sequence(const std::string& ref);
  void stop(proto::ResponseCode code);
  bool wait_idle(std::chrono::milliseconds timeout);
  AppenderStats stats() const;

  struct Item {
    std::weak_ptr<PublishSink> sink;
    uint8_t publisher_id = 0;
    std::string ref;
    Bytes entries;  // osiris entries back to back
    uint16_t num_entries = 0;
    uint32_t num_records = 0;
    uint64_t max_seq = 0;
    // The messages' filter values (Publish v2); when none has one, the
    // chunk keeps no filter.
    log::FilterValues filter;
    std::vector<uint64_t> ids;
    uint64_t bytes = 0;
    proto::ResponseCode code = proto::ResponseCode::ok;
  };
  void start_locked();
  void drain_locked();
  static void append_all(node::StreamHandle& stream, std::vector<Item>& items,
                         AppenderStats* stats);
  void finish(std::vector<Item> items, uint64_t through);
  static void notify(std::vector<Item>& items);
  // Answers every item still ok with stream_not_available; how many.
  static uint64_t refuse_pending(std::vector<Item>& items);
  // confirm = remote, on strand_: a drain waits to be remote.
  void hold_remote(std::vector<Item> items, uint64_t through);
  void start_wait(uint64_t through);
  bool waits_for_durability() const;
  void release_remote();
  void arm_remote_timer();

  const std::shared_ptr<node::StreamHandle> stream_;
  Strand strand_;
  TaskContext tasks_;
  const AppenderOptions opts_;
  // confirm = remote (strand_ only).
  RemoteConfirms remote_;
  std::map<uint64_t, std::vector<Item>> held_;  // by group
  uint64_t next_group_ = 1;
  asio::steady_timer remote_timer_;
  std::optional<int64_t> remote_timer_at_;
  // The linger (opts_.linger): when the last drain started, and the timer
  // of a lingering one (guarded by mu_).
  std::chrono::steady_clock::time_point last_drain_{};
  asio::steady_timer linger_timer_;
  bool lingering_ = false;
  uint64_t queued_bytes_ = 0;
  uint64_t msgs_since_drain_ = 0;  // submitted since last_drain_
  mutable std::mutex mu_;
  std::condition_variable idle_cv_;
  std::deque<Item> queue_;
  std::map<std::string, uint64_t> seqs_;  // highest accepted publishing id per reference
  bool running_ = false;
  bool stopped_ = false;
  proto::ResponseCode stop_code_ = proto::ResponseCode::ok;
  AppenderStats stats_;
};

StreamAppender::Impl::Impl(std::shared_ptr<node::StreamHandle> stream, asio::io_context& io,
                           TaskContext tasks, AppenderOptions opts)
    : stream_(std::move(stream)),
      strand_(asio::make_strand(io)),
      tasks_(std::move(tasks)),
      opts_(std::move(opts)),
      remote_(opts_.remote_timeout_ms),
      remote_timer_(strand_),
      linger_timer_(strand_) {}

void StreamAppender::Impl::submit(std::weak_ptr<PublishSink> sink, uint8_t publisher_id,
                                  const std::string& ref,
                                  const std::vector<proto::PublishedMessage>& messages,
                                  uint64_t bytes) {
  std::vector<Item> rejected;
  {
    std::lock_guard l(mu_);
    stats_.batches += 1;
    std::optional<uint64_t> last;
    if (!ref.empty()) {
      auto it = seqs_.find(ref);
      // The log keeps every writer's sequence durably (chunk trailers):
      // deduplication holds across reconnects and restarts.
      if (it != seqs_.end()) {
        last = it->second;
      } else {
        last = stream_->writer_sequence(ref);
      }
    }
    Item cur;
    auto push = [&] {
      if (cur.ids.empty()) return;
      cur.sink = sink;
      cur.publisher_id = publisher_id;
      cur.ref = ref;
      if (stopped_) {
        cur.code = stop_code_;
        rejected.push_back(std::move(cur));
      } else {
        queued_bytes_ += cur.entries.size();
        queue_.push_back(std::move(cur));
      }
      cur = Item();
    };
    for (const auto& m : messages) {
      if (cur.num_entries == kMaxEntries) push();
      cur.ids.push_back(m.publishing_id);
      // A publisher that resends what is stored gets a confirm, not a copy.
      if (!ref.empty() && last && m.publishing_id <= *last) {
        stats_.duplicates += 1;
        continue;
      }
      if (!ref.empty()) last = m.publishing_id;
      cur.entries.append(m.entry);
      cur.num_entries += 1;
      msgs_since_drain_ += 1;
      // No value and an empty one both count as none (FilterValues::add).
      cur.filter.add(m.filter_value.value_or(BytesView()));
      auto e = proto::parse_osiris_entry(m.entry);
      cur.num_records += e.ok() ? e->num_records : 1;
      cur.max_seq = std::max(cur.max_seq, m.publishing_id);
    }
    // The budget travels with the last item, so the connection gets it back
    // once the whole frame is done.
    cur.bytes = bytes;
    if (cur.ids.empty() && !queue_.empty() && !stopped_) {
      queue_.back().bytes += bytes;
    }
    push();
    if (!ref.empty() && last) seqs_[ref] = *last;
    if (lingering_ && queued_bytes_ >= opts_.linger_bytes) {
      // Enough for a chunk: no need to wait out the linger.
      lingering_ = false;
      linger_timer_.cancel();
      drain_locked();
    }
    if (!stopped_) start_locked();
  }
  notify(rejected);
}

std::optional<uint64_t> StreamAppender::Impl::sequence(const std::string& ref) {
  std::lock_guard l(mu_);
  auto it = seqs_.find(ref);
  if (it == seqs_.end()) return stream_->writer_sequence(ref);
  return it->second;
}

void StreamAppender::Impl::stop(ResponseCode code) {
  std::vector<Item> failed;
  {
    std::lock_guard l(mu_);
    if (stopped_) return;
    stopped_ = true;
    stop_code_ = code;
    for (auto& it : queue_) {
      it.code = code;
      failed.push_back(std::move(it));
    }
    queue_.clear();
    queued_bytes_ = 0;
    if (lingering_) {
      // Nothing is left to gather for.
      lingering_ = false;
      linger_timer_.cancel();
      running_ = false;
    }
    if (!running_) idle_cv_.notify_all();
  }
  notify(failed);
  if (waits_for_durability()) {
    // What waits to be remote is answered now: nothing after a stop may be
    // confirmed.
    asio::post(strand_, [self = shared_from_this()] {
      self->remote_.fail_all(Error(Errc::closed, "the stream's appender stopped"));
      self->release_remote();
    });
  }
}

bool StreamAppender::Impl::wait_idle(std::chrono::milliseconds timeout) {
  std::unique_lock l(mu_);
  return idle_cv_.wait_for(
      l, timeout, [&] { return !running_ && queue_.empty() && stats_.remote_pending == 0; });
}

AppenderStats StreamAppender::Impl::stats() const {
  std::lock_guard l(mu_);
  return stats_;
}

void StreamAppender::Impl::start_locked() {
  if (running_ || queue_.empty()) return;
  running_ = true;
  auto self = shared_from_this();
  const auto now = std::chrono::steady_clock::now();
  const auto since = now - last_drain_;
  // Messages per second since the last drain started, by cross-multiplying.
  const bool heavy =
      double(msgs_since_drain_) * 1e9 >=
      double(opts_.linger_min_rate) *
          double(std::chrono::duration_cast<std::chrono::nanoseconds>(since).count());
  if (opts_.linger.count() > 0 && queued_bytes_ < opts_.linger_bytes && since < opts_.linger &&
      heavy) {
    // Publishing is sustained: gather for the rest of the linger (or until
    // linger_bytes are queued, see submit) before the next chunk.
    lingering_ = true;
    linger_timer_.expires_at(last_drain_ + opts_.linger);
    linger_timer_.async_wait([self](asio::error_code) {
      std::lock_guard l(self->mu_);
      if (!self->lingering_) return;
      self->lingering_ = false;
      self->drain_locked();
    });
    return;
  }
  drain_locked();
}

// Takes the queue on the strand and appends it on the pool (running_ set).
void StreamAppender::Impl::drain_locked() {
  auto self = shared_from_this();
  last_drain_ = std::chrono::steady_clock::now();
  msgs_since_drain_ = 0;
  // run_task must start on the strand that receives its outcome.
  asio::post(strand_, [self] {
    // The queue is taken here, not when the drain was asked for: the frames
    // parsed meanwhile (the rest of the socket read that started it) go
    // into the same chunk, at no cost in latency.
    auto items = std::make_shared<std::vector<Item>>();
    {
      std::lock_guard l(self->mu_);
      items->assign(std::make_move_iterator(self->queue_.begin()),
                    std::make_move_iterator(self->queue_.end()));
      self->queue_.clear();
      self->queued_bytes_ = 0;
    }
    auto stream = self->stream_;
    auto counted = std::make_shared<AppenderStats>();
    // Where this drain's appends end (every offset below is committed).
    auto through = std::make_shared<std::atomic<uint64_t>>(0);
    run_task<bool>(
        self->tasks_, self->strand_, kDrainDeadline, "append to " + stream->dir(),
        [stream, items, counted, through] {
          append_all(*stream, *items, counted.get());
          through->store(stream->committed_next());
          return true;
        },
        [self, items, counted, through](TaskOutcome<bool> out) {
          if (out.end != TaskEnd::completed) {
            spdlog::error("stream {}: {}; stopping its appender", self->stream_->dir(),
                          out.error.to_string());
            for (auto& it : *items) it.code = ResponseCode::internal_error;
            self->stop(ResponseCode::internal_error);
          }
          {
            std::lock_guard l(self->mu_);
            self->stats_.appends += counted->appends;
            self->stats_.messages += counted->messages;
            self->stats_.failed += counted->failed;
          }
          self->finish(std::move(*items), through->load());
        });
  });
}

void StreamAppender::Impl::append_all(node::StreamHandle& stream, std::vector<Item>& items,
                                      AppenderStats* stats) {
  const uint64_t max_bytes = stream.max_chunk_bytes();
  Bytes merged;
  size_t i = 0;
  while (i < items.size()) {
    if (items[i].num_entries == 0) {
      ++i;
      continue;
    }
    // Consecutive batches of the same writer go into one chunk: one write
    // and one sync for all of them.
    size_t j = i + 1;
    uint64_t bytes = items[i].entries.size();
    uint32_t entries = items[i].num_entries;
    while (j < items.size() && items[j].ref == items[i].ref &&
           (items[j].num_entries == 0 || (entries + items[j].num_entries <= kMaxEntries &&
                                          bytes + items[j].entries.size() <= max_bytes))) {
      bytes += items[j].entries.size();
      entries += items[j].num_entries;
      ++j;
    }
    log::EntryBatch b;
    b.writer_ref = items[i].ref;
    log::FilterValues filter;
    for (size_t k = i; k < j; ++k) filter.merge(items[k].filter);
    if (!filter.empty()) b.filter = &filter;
    if (j == i + 1) {
      b.entries = items[i].entries;
    } else {
      merged.clear();
      for (size_t k = i; k < j; ++k) merged.append(items[k].entries);
      b.entries = merged;
    }
    for (size_t k = i; k < j; ++k) {
      b.num_entries = uint16_t(b.num_entries + items[k].num_entries);
      b.num_records += items[k].num_records;
      b.writer_seq = std::max(b.writer_seq, items[k].max_seq);
    }
    auto st = stream.append(b);
    stats->appends += 1;
    if (st.ok()) {
      stats->messages += b.num_entries;
    } else {
      spdlog::warn("stream {}: append failed: {}", stream.dir(), st.error().to_string());
      for (size_t k = i; k < j; ++k) {
        items[k].code = code_for(st.error());
        stats->failed += 1;
      }
    }
    i = j;
  }
}

void StreamAppender::Impl::finish(std::vector<Item> items, uint64_t through) {
  if (waits_for_durability()) {
    hold_remote(std::move(items), through);
  } else {
    // A local confirm promises what this node holds; a node whose lease
    // ended meanwhile (frozen, cut off from etcd) may be replaced by an
    // owner that never sees these: refused, the client publishes again.
    if (stream_->lease_ended()) {
      const uint64_t refused = refuse_pending(items);
      if (refused > 0) {
        spdlog::warn(
            "stream {}: {} publish batch(es) appended as this node's cluster lease "
            "ended: not confirmed (stream_not_available)",
            stream_->dir(), refused);
      }
    }
    notify(items);
  }
  std::lock_guard l(mu_);
  running_ = false;
  if (!stopped_) start_locked();
  if (!running_) idle_cv_.notify_all();
}

// ---- confirm = remote (on strand_) ----

void StreamAppender::Impl::hold_remote(std::vector<Item> items, uint64_t through) {
  // Duplicates (no entries) wait too: the copy stored earlier may not be
  // remote yet, and `through` covers it.
  bool needs_wait = false;
  for (const Item& it : items)
    needs_wait = needs_wait || (it.code == ResponseCode::ok && !it.ids.empty());
  if (needs_wait && !stream_->tiered() && !opts_.replicas) {
    spdlog::error(
        "stream {}: confirm = remote but the stream has no uploader (tiering disabled); "
        "failing the batches",
        stream_->dir());
    refuse_pending(items);
    needs_wait = false;
  }
  uint64_t group = next_group_++;
  held_[group] = std::move(items);
  {
    std::lock_guard l(mu_);
    stats_.remote_pending += 1;
  }
  if (auto w = remote_.add(group, through, needs_wait, steady_ms())) start_wait(*w);
  release_remote();
}

void StreamAppender::Impl::start_wait(uint64_t through) {
  {
    std::lock_guard l(mu_);
    stats_.remote_waits += 1;
  }
  // The uploader answers exactly once (persisted, or why it stopped) —
  // unless its event loop has ended; the deadline covers that.
  auto answered = [self = shared_from_this(), through](Status s) {
    asio::post(self->strand_, [self, through, s = std::move(s)] {
      // The persist (or the copies' acknowledgement) that answered may
      // cover groups added after this wait started: they go now too.
      const uint64_t persisted = !s.ok()                ? 0
                                 : self->opts_.replicas ? self->opts_.replicas->end()
                                                        : self->stream_->persisted_next();
      if (auto w = self->remote_.on_wait(through, s, steady_ms(), persisted)) {
        self->start_wait(*w);
      }
      self->release_remote();
    });
  };
  if (opts_.replicas) {
    if (through == 0) return answered(Status::OK());
    opts_.replicas->await_beyond(through - 1, std::move(answered));
  } else {
    stream_->await_remote(through, std::move(answered));
  }
}

// A confirm waits past the local append: remote, or replicated in a cluster.
bool StreamAppender::Impl::waits_for_durability() const {
  return stream_->confirm() == node::ConfirmMode::remote ||
         (stream_->confirm() == node::ConfirmMode::replicated && opts_.replicas);
}

void StreamAppender::Impl::release_remote() {
  std::vector<RemoteConfirms::Release> ready = remote_.take_ready(steady_ms());
  uint64_t failed = 0;
  // A replicated confirm promises what a majority of copies holds *under
  // this owner's tenure*: once its lease has ended (frozen, cut off from
  // etcd) the others may have elected a copy that stood before the last
  // acknowledgements came in (a resumed owner still feeds its copies what
  // it wrote before the freeze). Refused, the client publishes again. A
  // persisted manifest (`remote`) is fenced by its epoch instead: what was
  // persisted stays, whoever owns the stream now.
  const bool fenced = opts_.replicas && !ready.empty() && stream_->lease_ended();
  for (auto& r : ready) {
    auto node = held_.extract(r.group);
    if (node.empty()) continue;
    std::vector<Item>& items = node.mapped();
    if (r.status.ok() && fenced) {
      const uint64_t refused = refuse_pending(items);
      failed += refused;
      if (refused > 0) {
        spdlog::warn(
            "stream {}: {} publish batch(es) held by a majority of copies as this node's cluster "
            "lease ended: not confirmed (stream_not_available)",
            stream_->dir(), refused);
      }
    } else if (!r.status.ok()) {
      spdlog::warn(
          "stream {}: confirm = remote: {}; answering the publishes with "
          "stream_not_available",
          stream_->dir(), r.status.error().to_string());
      failed += refuse_pending(items);
    }
    notify(items);
  }
  if (!ready.empty()) {
    std::lock_guard l(mu_);
    stats_.remote_pending -= std::min<uint64_t>(stats_.remote_pending, ready.size());
    stats_.remote_failed += failed;
    if (!running_ && queue_.empty() && stats_.remote_pending == 0) idle_cv_.notify_all();
  }
  arm_remote_timer();
}

void StreamAppender::Impl::arm_remote_timer() {
  std::optional<int64_t> at = remote_.next_deadline();
  if (at == remote_timer_at_) return;
  remote_timer_at_ = at;
  if (!at) {
    remote_timer_.cancel();
    return;
  }
  remote_timer_.expires_after(std::chrono::milliseconds(std::max<int64_t>(0, *at - steady_ms())));
  remote_timer_.async_wait([self = shared_from_this(), at](const std::error_code& ec) {
    if (ec || self->remote_timer_at_ != at) return;
    self->remote_timer_at_.reset();
    self->release_remote();
  });
}

uint64_t StreamAppender::Impl::refuse_pending(std::vector<Item>& items) {
  uint64_t refused = 0;
  for (Item& it : items) {
    if (it.code != ResponseCode::ok) continue;
    it.code = ResponseCode::stream_not_available;
    refused += 1;
  }
  return refused;
}

void StreamAppender::Impl::notify(std::vector<Item>& items) {
  for (auto& it : items) {
    if (auto s = it.sink.lock()) {
      s->on_appended(it.publisher_id, std::move(it.ids), it.code, it.bytes);
    }
  }
}

StreamAppender::StreamAppender(std::shared_ptr<node::StreamHandle> stream, asio::io_context& io,
                               TaskContext tasks, AppenderOptions opts)
    : impl_(std::make_shared<Impl>(std::move(stream), io, std::move(tasks), std::move(opts))) {}

void StreamAppender::submit(std::weak_ptr<PublishSink> sink, uint8_t publisher_id,
                            const std::string& ref,
                            const std::vector<proto::PublishedMessage>& messages, uint64_t bytes) {
  impl_->submit(std::move(sink), publisher_id, ref, messages, bytes);
}

std::optional<uint64_t> StreamAppender::sequence(const std::string& ref) {
  return impl_->sequence(ref);
}

void StreamAppender::stop(proto::ResponseCode code) {
  impl_->stop(code);
}

bool StreamAppender::wait_idle(std::chrono::milliseconds timeout) {
  return impl_->wait_idle(timeout);
}

AppenderStats StreamAppender::stats() const {
  return impl_->stats();
}

node::ConfirmMode StreamAppender::confirm() const {
  return impl_->stream_->confirm();
}

}  // namespace strata::server
