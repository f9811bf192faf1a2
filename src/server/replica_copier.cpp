#include "server/replica_copier.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <asio/post.hpp>

#include "log/reader.h"
#include "server/copy_frame.h"

namespace strata::server {

// Segments wholly below the remote tier's end may go; the rest is what a
// takeover here would keep.
struct ReplicaCopier::Trim : log::LogHooks {
  std::atomic<uint64_t> remote_next{0};
  bool may_delete_segment(const log::SegmentInfo& s) override {
    return !s.active && s.next_offset <= remote_next.load(std::memory_order_acquire);
  }
};

namespace {

struct Prepared {
  std::shared_ptr<log::StreamLog> copy;
  uint64_t from = 0;
  std::optional<log::ChunkHeader> last;  // the copy's last chunk, to check
};

// Where the remote tier ends now (0: nothing uploaded yet).
Result<uint64_t> remote_next_of(const std::shared_ptr<node::RemoteStream>& remote) {
  if (!remote) return uint64_t(0);
  auto m = remote->load_manifest();
  if (!m.ok() && m.code() == Errc::not_found) return uint64_t(0);
  if (!m.ok()) return std::move(m).error();
  return m->manifest->next_offset;
}

Result<log::ChunkHeader> last_chunk(log::StreamLog& copy) {
  STRATA_ASSIGN_OR_RETURN(auto r, copy.open_reader(log::OffsetSpec::last()));
  STRATA_ASSIGN_OR_RETURN(auto c, r->next_chunk_location());
  if (!c) return Error(Errc::not_found, "the copy holds no chunk");
  return c->header;
}

bool same_chunk(const log::ChunkHeader& a, const log::ChunkHeader& b) {
  return a.first_offset == b.first_offset && a.num_records == b.num_records &&
         a.num_entries == b.num_entries && a.epoch == b.epoch && a.timestamp_ms == b.timestamp_ms &&
         a.data_len == b.data_len && a.wire_crc == b.wire_crc && a.type == b.type;
}

}  // namespace

std::shared_ptr<ReplicaCopier> ReplicaCopier::start(CopierEnv env, Strand strand,
                                                    TaskContext tasks) {
  std::shared_ptr<ReplicaCopier> c(new ReplicaCopier(std::move(env), strand, tasks));
  asio::post(strand, [c] {
    c->prepare(false);
    c->check_owner();
    c->trim();
  });
  return c;
}

ReplicaCopier::ReplicaCopier(CopierEnv env, Strand strand, TaskContext tasks)
    : env_(std::move(env)),
      strand_(strand),
      tasks_(tasks),
      trim_hooks_(std::make_shared<Trim>()),
      retry_timer_(strand),
      next_retry_(env_.first_retry),
      owner_timer_(strand),
      trim_timer_(strand) {}

ReplicaCopier::~ReplicaCopier() = default;

void ReplicaCopier::stop() {
  if (stopped_.exchange(true)) return;
  generation_ += 1;
  if (link_) link_->stop();
  link_.reset();
  retry_timer_.cancel();
  owner_timer_.cancel();
  trim_timer_.cancel();
}

void ReplicaCopier::end(const Error& why) {
  if (stopped_) return;
  spdlog::info("copy of {}: ends: {}", stream(), why.to_string());
  stop();
}

void ReplicaCopier::prepare(bool drop) {
  if (stopped_) return;
  const uint64_t gen = ++generation_;
  const OwnerLookup o = env_.replica.owner();
  if (o.kind == OwnerLookup::Kind::gone) {
    return end(Error(Errc::not_found, "the stream is gone from the cluster"));
  }
  if (o.kind != OwnerLookup::Kind::owned || o.node_id == env_.self_id) {
    return restart(Error(Errc::unavailable, "no other node owns the stream now"), drop);
  }
  using R = Result<Prepared>;
  run_task<R>(
      tasks_, strand_, env_.task_deadline, "copy: preparing " + stream(),
      [node = env_.node, remote = env_.replica.remote, name = stream(), trim = trim_hooks_,
       drop]() -> R {
        STRATA_ASSIGN_OR_RETURN(uint64_t remote_next, remote_next_of(remote));
        trim->remote_next.store(remote_next, std::memory_order_release);
        if (drop) STRATA_TRY(node->drop_copy(name));
        STRATA_ASSIGN_OR_RETURN(auto copy, node->open_copy(name, remote_next, trim));
        const uint64_t first = copy->first_offset(), end = copy->committed_next();
        if (end > remote_next && first <= remote_next) {
          // Past the bucket: checked against the owner's log first.
          STRATA_ASSIGN_OR_RETURN(log::ChunkHeader last, last_chunk(*copy));
          return Prepared{copy, last.first_offset, last};
        }
        if (first != remote_next || end != remote_next) {
          // Nothing past the bucket, or a gap before it: a fresh copy at its end.
          STRATA_TRY(node->drop_copy(name));
          STRATA_ASSIGN_OR_RETURN(copy, node->open_copy(name, remote_next, trim));
        }
        return Prepared{copy, remote_next, std::nullopt};
      },
      [self = shared_from_this(), gen](TaskOutcome<R> out) {
        if (self->stopped_ || gen != self->generation_) return;
        if (out.end != TaskEnd::completed) return self->restart(out.error, false);
        if (!out.value->ok()) {
          const Error& e = out.value->error();
          // This node serves the stream now, or is closing.
          if (e.code == Errc::conflict || e.code == Errc::closed) return self->end(e);
          return self->restart(e, false);
        }
        Prepared p = std::move(*out.value).value();
        self->copy_ = std::move(p.copy);
        self->expect_ = p.last;
        self->connect(p.from);
      });
}

void ReplicaCopier::connect(uint64_t from) {
  const OwnerLookup o = env_.replica.owner();
  if (o.kind != OwnerLookup::Kind::owned || o.node_id == env_.self_id) {
    return restart(Error(Errc::unavailable, "the owner changed"), false);
  }
  OwnerLinkOptions lo = env_.replica.link_to(o);
  lo.stream = stream();
  lo.spec = proto::OffsetSpec{proto::OffsetType::offset, int64_t(from)};
  lo.credit = env_.credit;
  lo.copy = true;
  lo.copy_node = env_.self_id;
  lo.copy_holds_first = expect_.has_value();
  const uint64_t gen = generation_;
  std::weak_ptr<ReplicaCopier> weak = shared_from_this();
  OwnerLinkHandlers h;
  h.deliver = [weak, gen](const proto::DeliverFrame& f) {
    auto self = weak.lock();
    if (self && !self->stopped_ && gen == self->generation_) self->on_chunk(f);
  };
  h.down = [weak, gen](const Error& e) {
    auto self = weak.lock();
    if (!self || self->stopped_ || gen != self->generation_) return;
    if (e.code == Errc::conflict) {
      // The owner's log ends before the copy's last chunk (owner_link.h,
      // copy_holds_first): that tail is another tenure's.
      spdlog::warn(
          "copy of {} from {}: the copy runs past the owner's log, so its tail is not the "
          "owner's; it starts again where the remote tier ends: {}",
          self->stream(), self->linked_node_, e.to_string());
      if (self->env_.dropped_copies) {
        self->env_.dropped_copies->fetch_add(1, std::memory_order_relaxed);
      }
      return self->restart(e, true);
    }
    self->restart(e, false);
  };
  linked_node_ = o.node_id;
  link_ = OwnerLink::start(strand_, std::move(lo), std::move(h));
  spdlog::debug("copy of {}: following {} from offset {}", stream(), o.node_id, from);
}

void ReplicaCopier::on_chunk(const proto::DeliverFrame& f) {
  const std::string where = fmt::format("copy of {} from {}", stream(), linked_node_);
  auto stored = stored_chunk_of(f.chunk, where);
  if (!stored.ok()) return restart(stored.error(), false);
  if (expect_) {
    auto h = log::decode_chunk_header(*stored, where);
    const bool same = h.ok() && same_chunk(*h, *expect_);
    const log::ChunkHeader want = *expect_;
    expect_.reset();
    if (!same) {
      spdlog::warn(
          "{}: the copy's last chunk (offset {}, epoch {}) is not the owner's: the copy no longer "
          "lines up with the owner's log and starts again where the remote tier ends",
          where, want.first_offset, want.epoch);
      if (env_.dropped_copies) env_.dropped_copies->fetch_add(1, std::memory_order_relaxed);
      return restart(Error(Errc::conflict, "diverged from the owner's log"), true);
    }
    if (link_) link_->credit(1);
    return;
  }
  queued_.push_back(std::move(stored).value());
  pump();
}

void ReplicaCopier::pump() {
  if (appending_ || queued_.empty() || !copy_ || stopped_) return;
  appending_ = true;
  auto batch = std::make_shared<std::vector<Bytes>>(std::move(queued_));
  queued_.clear();
  const uint64_t gen = generation_;
  run_task<Status>(
      tasks_, strand_, env_.task_deadline, "copy: appending to " + stream(),
      // One commit (one fsync under `always`) for the whole batch: a copy
      // that fell behind catches up in one step, not one fsync per chunk.
      [copy = copy_, batch, name = stream()]() -> Status {
        auto r = copy->append_copies(*batch, "copy of " + name);
        if (!r.ok()) return std::move(r).error();
        return Status::OK();
      },
      [self = shared_from_this(), gen, n = batch->size()](TaskOutcome<Status> out) {
        self->appending_ = false;
        if (self->stopped_) return;
        const Status s = out.end == TaskEnd::completed ? *out.value : Status(out.error);
        if (gen != self->generation_) return;  // restarted meanwhile: prepare reads the copy
        if (!s.ok()) {
          // Closed: this node acquired the stream (or is closing).
          if (s.code() == Errc::closed) return self->end(s.error());
          return self->restart(s.error(), s.code() != Errc::unavailable);
        }
        if (self->env_.copied_chunks) {
          self->env_.copied_chunks->fetch_add(n, std::memory_order_relaxed);
        }
        // The link works: the next failure is retried quickly again.
        self->next_retry_ = self->env_.first_retry;
        if (self->link_) self->link_->credit(uint16_t(n));
        self->pump();
      });
}

void ReplicaCopier::restart(const Error& why, bool drop) {
  if (stopped_) return;
  generation_ += 1;
  if (link_) link_->stop();
  link_.reset();
  expect_.reset();
  queued_.clear();
  const auto wait = next_retry_;
  next_retry_ = std::min(2 * next_retry_, env_.retry);
  spdlog::debug("copy of {}: again in {} ms: {}", stream(), wait.count(), why.to_string());
  retry_timer_.expires_after(wait);
  retry_timer_.async_wait(
      [weak = std::weak_ptr<ReplicaCopier>(shared_from_this()), drop](std::error_code ec) {
        auto self = weak.lock();
        if (ec || !self || self->stopped_) return;
        // An append still running finishes before the copy is looked at.
        if (self->appending_) return self->restart(Error(Errc::unavailable, "appending"), drop);
        self->prepare(drop);
      });
}

void ReplicaCopier::check_owner() {
  if (stopped_) return;
  const OwnerLookup o = env_.replica.owner();
  if (o.kind == OwnerLookup::Kind::gone) {
    return end(Error(Errc::not_found, "the stream is gone from the cluster"));
  }
  if (link_ && (o.kind != OwnerLookup::Kind::owned || o.node_id != linked_node_)) {
    restart(Error(Errc::unavailable, "the cluster names another owner"), false);
  }
  owner_timer_.expires_after(env_.replica.owner_check);
  owner_timer_.async_wait(
      [weak = std::weak_ptr<ReplicaCopier>(shared_from_this())](std::error_code ec) {
        if (auto self = weak.lock(); self && !ec) self->check_owner();
      });
}

void ReplicaCopier::trim() {
  if (stopped_) return;
  auto again = [weak = std::weak_ptr<ReplicaCopier>(shared_from_this())] {
    auto self = weak.lock();
    if (!self || self->stopped_) return;
    self->trim_timer_.expires_after(self->env_.trim_every);
    self->trim_timer_.async_wait([weak](std::error_code ec) {
      if (auto self = weak.lock(); self && !ec) self->trim();
    });
  };
  if (!copy_) return again();
  run_task<Status>(
      tasks_, strand_, env_.task_deadline, "copy: trimming " + stream(),
      [copy = copy_, remote = env_.replica.remote, trim = trim_hooks_]() -> Status {
        STRATA_ASSIGN_OR_RETURN(uint64_t remote_next, remote_next_of(remote));
        trim->remote_next.store(remote_next, std::memory_order_release);
        auto r = copy->apply_retention();
        if (!r.ok() && r.code() != Errc::closed) return std::move(r).error();
        return Status::OK();
      },
      [self = shared_from_this(), again](TaskOutcome<Status> out) {
        if (out.end != TaskEnd::completed || !out.value->ok()) {
          const Error& e = out.end != TaskEnd::completed ? out.error : out.value->error();
          spdlog::warn("copy of {}: trimming: {}", self->stream(), e.to_string());
        }
        again();
      });
}

}  // namespace strata::server
