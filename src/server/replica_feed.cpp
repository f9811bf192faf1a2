#include "server/replica_feed.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <asio/post.hpp>
#include <cstring>
#include <mutex>

#include "common/crc32.h"
#include "proto/commands.h"
#include "server/server_limits.h"

namespace strata::server {

namespace {

std::optional<RemoteRange> range_of(const std::optional<tier::CachedManifest>& m) {
  if (!m || !m->manifest) return std::nullopt;
  return RemoteRange{m->manifest->first_offset, m->manifest->next_offset};
}

struct RemoteBatch {
  std::vector<std::shared_ptr<ChunkFrame>> frames;
  bool exhausted = false;  // the snapshot ends here
  uint64_t cursor = 0;
  std::optional<tier::CachedManifest> newer;  // read again at the end of the snapshot
  std::optional<Error> error;
};

// One remote chunk as a Deliver frame: the head for this subscription, then
// the chunk's data, copied once out of the reader's buffer (which its next
// call reuses).
std::shared_ptr<ChunkFrame> frame_for(const log::ChunkHeader& h, BytesView data, uint32_t crc,
                                      uint16_t version, uint8_t sub_id) {
  auto f = std::make_shared<ChunkFrame>();
  f->chunk_id = h.first_offset;
  f->num_records = h.num_records;
  proto::encode_deliver_head(version, sub_id, h.first_offset, osiris_header_for(h, crc), &f->bytes);
  f->bytes.append(data.data(), data.size());
  return f;
}

// Adds one remote chunk to the batch: joined to the last frame when it may
// be (delivery.h joinable: consecutive small chunks go out as one, as from
// the owner), else as a frame of its own — unless the batch has max_chunks
// frames already: false, nothing added. `open`: the last frame's header
// while more may join it.
bool add_remote(const log::ChunkHeader& h, BytesView data, uint64_t limit, uint32_t max_chunks,
                uint16_t version, uint8_t sub_id, RemoteBatch* b,
                std::optional<proto::OsirisChunkHeader>* open, uint64_t* mem) {
  const uint32_t crc = h.wire_crc_known() ? h.wire_crc : crc32_zlib(data);
  const bool join_ok = *open && joinable(**open, h, limit);
  const JoinRole role = join_role(h, data, join_ok, limit);
  if (join_ok && role.simple) {
    ChunkFrame& f = *b->frames.back();
    join_into(&**open, h, crc);
    Bytes head;
    proto::encode_deliver_head(version, sub_id, (*open)->chunk_id, **open, &head);
    std::memcpy(f.bytes.data(), head.data(), head.size());
    f.bytes.append(data.data(), data.size());
    f.num_records += h.num_records;
    f.joined += 1;
    *mem += data.size();
    return true;
  }
  if (b->frames.size() >= max_chunks) return false;
  b->frames.push_back(frame_for(h, data, crc, version, sub_id));
  *mem += b->frames.back()->bytes.size();
  open->reset();
  if (role.takes_joins) *open = osiris_header_for(h, crc);
  return true;
}

}  // namespace

// What read jobs share with the feed: the remote reader (one job at a time)
// and the stream it reads (which the reader must not outlive).
struct ReplicaFeed::Source {
  std::mutex mu;
  std::shared_ptr<node::RemoteStream> remote;
  std::unique_ptr<tier::RemoteReader> reader;
  std::shared_ptr<const tier::Manifest> manifest;  // the snapshot to open or refresh with
  std::optional<tier::RemoteStart> start;          // open a reader there first
  bool refresh = false;                            // continue in `manifest`
  // A chunk read by the job before that did not join its last frame (a
  // copy: the reader may be refreshed in between); the next job starts
  // with it.
  struct Carried {
    log::ChunkHeader header;
    Bytes data;
  };
  std::optional<Carried> carry;
};

ReplicaFeed::ReplicaFeed(ReplicaEnv env, proto::OffsetSpec spec, Strand strand, TaskContext tasks)
    : env_(std::move(env)),
      core_(spec, env_.reconnect_limit),
      strand_(strand),
      tasks_(std::move(tasks)),
      timer_(strand) {}

ReplicaFeed::~ReplicaFeed() = default;

std::shared_ptr<ReplicaFeed> ReplicaFeed::start(ReplicaEnv env, proto::OffsetSpec spec,
                                                std::shared_ptr<FrameSink> sink, Strand strand,
                                                TaskContext tasks, uint8_t subscription_id,
                                                uint16_t deliver_version, uint32_t initial_credit,
                                                std::function<void(const Error&)> on_end) {
  std::shared_ptr<ReplicaFeed> f(new ReplicaFeed(std::move(env), spec, strand, std::move(tasks)));
  f->sink_ = std::move(sink);
  f->sub_id_ = subscription_id;
  f->version_ = deliver_version;
  f->credit_ = initial_credit;
  f->on_end_ = std::move(on_end);
  f->src_ = std::make_shared<Source>();
  f->src_->remote = f->env_.remote;
  f->open();
  return f;
}

void ReplicaFeed::stop() {
  if (stopped_) return;
  stopped_ = true;
  timer_.cancel();
  if (link_) link_->stop();
  link_.reset();
}

Error ReplicaFeed::diverged(const ChunkFrame& f) const {
  return Error(Errc::conflict,
               fmt::format("stream {}: chunk [{}, {}) does not line up with offset {} this "
                           "consumer reached (a takeover dropped a tail it had read); the "
                           "subscription ends so the client subscribes again",
                           env_.stream, f.chunk_id, f.chunk_id + f.num_records,
                           core_.delivered_next().value_or(0)));
}

void ReplicaFeed::end(const Error& e) {
  if (stopped_) return;
  stop();
  if (on_end_) on_end_(e);
}

void ReplicaFeed::open() {
  auto remote = env_.remote;
  using R = Result<tier::CachedManifest>;
  run_task<R>(
      tasks_, strand_, kReplicaLoadDeadline, "replica: manifest of " + env_.stream,
      [remote]() -> R {
        if (!remote) return Error(Errc::not_found, "tiering is disabled on this node");
        return remote->load_manifest();
      },
      [self = shared_from_this()](TaskOutcome<R> out) {
        if (self->stopped_) return;
        std::optional<tier::CachedManifest> m;
        if (out.end != TaskEnd::completed) return self->end(out.error);
        if (out.value->ok()) {
          m = std::move(*out.value).value();
        } else if (out.value->error().code != Errc::not_found) {
          return self->end(out.value->error());
        }
        if (m) self->src_->manifest = m->manifest;
        self->run(self->core_.start(range_of(m)));
      });
}

void ReplicaFeed::run(const ReplicaStep& step) {
  switch (step.kind) {
    case ReplicaStep::Kind::read_remote:
      remote_ = true;
      {
        std::lock_guard l(src_->mu);
        if (src_->reader) {
          src_->refresh = true;
        } else {
          src_->start = step.remote;
        }
      }
      pump();
      return;
    case ReplicaStep::Kind::forward:
      remote_ = false;
      pending_ = step;
      connect();
      return;
    case ReplicaStep::Kind::give_up:
      end(Error(Errc::unavailable, fmt::format("stream {}: no owner to forward from within {} ms",
                                               env_.stream, env_.reconnect_limit.count())));
      return;
  }
}

void ReplicaFeed::add_credit(uint16_t n) {
  if (stopped_) return;
  credit_ += n;
  top_up_owner();
  pump();
}

// The owner forwards only within the credit its link holds: at most
// kReplicaLinkWindow chunks given and not yet written to the consumer,
// however much credit the consumer gave. Held back, the rest is given as
// the consumer reads.
uint32_t ReplicaFeed::owner_credit_room() const {
  const uint32_t held = owner_credit_ + unsent_;
  if (held >= kReplicaLinkWindow || credit_ <= owner_credit_) return 0;
  return std::min(kReplicaLinkWindow - held, credit_ - owner_credit_);
}

void ReplicaFeed::top_up_owner() {
  if (!link_) return;
  const uint32_t give = owner_credit_room();
  if (give == 0) return;
  owner_credit_ += give;
  link_->credit(uint16_t(give));
}

void ReplicaFeed::pump() {
  if (stopped_ || !remote_ || reading_ || credit_ == 0 || unsent_ >= kReplicaBatchChunks) return;
  read_remote();
}

void ReplicaFeed::read_remote() {
  reading_ = true;
  auto src = src_;
  tier::StreamReaderOptions ro = env_.reader;
  uint32_t max_chunks = std::min(credit_, kReplicaBatchChunks);
  uint16_t version = version_;
  uint8_t sub_id = sub_id_;
  const uint64_t limit = env_.coalesce_bytes;
  run_task<RemoteBatch>(
      tasks_, strand_, env_.read_deadline, "replica: remote read of " + env_.stream,
      [src, ro, max_chunks, version, sub_id, limit]() -> RemoteBatch {
        RemoteBatch b;
        std::lock_guard l(src->mu);
        if (src->start) {
          auto r = src->remote->open_reader(src->manifest, *src->start, ro);
          if (!r.ok()) {
            b.error = r.error();
            return b;
          }
          src->reader = std::move(r).value();
          src->start.reset();
          src->carry.reset();
        } else if (src->refresh) {
          src->reader->refresh(src->manifest);
          src->refresh = false;
        }
        uint64_t mem = 0;
        std::optional<proto::OsirisChunkHeader> open;
        if (src->carry) {
          add_remote(src->carry->header, src->carry->data, limit, max_chunks, version, sub_id, &b,
                     &open, &mem);
          src->carry.reset();
        }
        // With its frames complete the batch still takes chunks that join
        // the last one.
        while ((b.frames.size() < max_chunks || open) && mem < kReplicaBatchBytes) {
          auto c = src->reader->next(UINT64_MAX);
          if (!c.ok()) {
            b.error = c.error();
            return b;
          }
          if (!*c) {
            b.exhausted = true;
            b.cursor = src->reader->cursor();
            // The uploader may have persisted more since the snapshot.
            auto m = src->remote->load_manifest();
            if (m.ok()) {
              b.newer = *m;
              if (m->manifest && m->manifest->next_offset > b.cursor) src->manifest = m->manifest;
            }
            break;
          }
          const log::ChunkHeader& h = (*c)->header;
          if (h.type != log::ChunkType::user) continue;
          const BytesView data = (*c)->bytes.substr(log::kChunkHeaderSize, h.data_len);
          if (!add_remote(h, data, limit, max_chunks, version, sub_id, &b, &open, &mem)) {
            src->carry = Source::Carried{h, Bytes(data)};
            break;
          }
        }
        return b;
      },
      [self = shared_from_this()](TaskOutcome<RemoteBatch> out) {
        self->reading_ = false;
        if (self->stopped_) return;
        if (out.end != TaskEnd::completed) return self->end(out.error);
        RemoteBatch& b = *out.value;
        for (auto& f : b.frames) {
          const auto a = self->core_.accept(f->chunk_id, f->chunk_id + f->num_records);
          if (a == ReplicaCore::Accept::diverged) return self->end(self->diverged(*f));
          if (a == ReplicaCore::Accept::repeat) continue;
          self->st_.remote_chunks += 1;
          if (self->env_.remote_chunks) *self->env_.remote_chunks += 1;
          self->send(std::move(f));
        }
        if (b.error) {
          return self->end(
              std::move(*b.error).with_context("stream " + self->env_.stream + " remote tier"));
        }
        if (b.exhausted) return self->run(self->core_.remote_done(b.cursor, range_of(b.newer)));
        self->pump();
      });
}

void ReplicaFeed::send(std::shared_ptr<ChunkFrame> f) {
  credit_ -= std::min<uint32_t>(credit_, 1);
  unsent_ += 1;
  std::weak_ptr<ReplicaFeed> weak = shared_from_this();
  Strand st = strand_;
  sink_->send(std::move(f), [weak, st](std::error_code) {
    asio::post(st, [weak] {
      auto self = weak.lock();
      if (!self) return;
      self->unsent_ -= std::min<uint32_t>(self->unsent_, 1);
      self->top_up_owner();
      self->pump();
    });
  });
}

void ReplicaFeed::connect() {
  if (stopped_) return;
  OwnerLookup o = env_.owner();
  if (o.kind == OwnerLookup::Kind::gone) {
    return end(Error(Errc::not_found, fmt::format("stream {} no longer exists", env_.stream)));
  }
  if (o.kind == OwnerLookup::Kind::ownerless)
    return link_down(Error(Errc::unavailable, "no owner"));
  OwnerLinkOptions lo = env_.link_to(o);
  lo.stream = env_.stream;
  lo.spec = pending_.spec;
  // A new link: what the previous one held is gone with it.
  owner_credit_ = 0;
  owner_credit_ = owner_credit_room();
  lo.credit = uint16_t(owner_credit_);
  lo.setup_deadline = std::min(env_.reconnect_limit, std::chrono::milliseconds(5000));
  std::weak_ptr<ReplicaFeed> weak = shared_from_this();
  OwnerLinkHandlers h;
  h.up = [weak] {
    if (auto self = weak.lock()) {
      self->core_.linked();
      self->backoff_ = std::chrono::milliseconds(100);
      self->check_owner();
    }
  };
  h.deliver = [weak](const proto::DeliverFrame& m) {
    if (auto self = weak.lock()) self->deliver_forwarded(m);
  };
  h.down = [weak](const Error& e) {
    if (auto self = weak.lock()) {
      self->link_.reset();
      self->link_down(e);
    }
  };
  linked_node_ = o.node_id;
  st_.links += 1;
  if (env_.links) *env_.links += 1;
  link_ = OwnerLink::start(strand_, std::move(lo), std::move(h));
}

void ReplicaFeed::link_down(const Error& e) {
  if (stopped_) return;
  ReplicaStep s = core_.link_lost(std::chrono::steady_clock::now());
  if (s.kind == ReplicaStep::Kind::give_up) {
    return end(
        Error(e).with_context(fmt::format("stream {}: forwarding from its owner", env_.stream)));
  }
  spdlog::debug("replica of {}: {}; subscribing again", env_.stream, e.to_string());
  pending_ = s;
  retry_later();
}

void ReplicaFeed::retry_later() {
  timer_.expires_after(backoff_);
  backoff_ = std::min(backoff_ * 2, kReplicaMaxBackoff);
  timer_.async_wait([weak = std::weak_ptr<ReplicaFeed>(shared_from_this())](std::error_code ec) {
    auto self = weak.lock();
    if (ec || !self || self->stopped_) return;
    self->connect();
  });
}

// The owner's MetadataUpdate and the connection's end say the owner moved;
// a frozen owner says neither until it wakes: the cluster's view does.
void ReplicaFeed::check_owner() {
  timer_.expires_after(env_.owner_check);
  timer_.async_wait([weak = std::weak_ptr<ReplicaFeed>(shared_from_this())](std::error_code ec) {
    auto self = weak.lock();
    if (ec || !self || self->stopped_ || !self->link_) return;
    OwnerLookup o = self->env_.owner();
    if (o.kind == OwnerLookup::Kind::owned && o.node_id == self->linked_node_) {
      return self->check_owner();
    }
    self->link_->stop();
    self->link_.reset();
    self->link_down(Error(Errc::unavailable,
                          fmt::format("owner {} no longer owns the stream", self->linked_node_)));
  });
}

void ReplicaFeed::deliver_forwarded(const proto::DeliverFrame& m) {
  owner_credit_ -= std::min<uint32_t>(owner_credit_, 1);
  auto h = proto::decode_osiris_header(m.chunk);
  if (!h.ok()) {
    if (link_) link_->stop();
    link_.reset();
    return end(std::move(h).error().with_context("a chunk forwarded by the owner"));
  }
  const auto a = core_.accept(h->chunk_id, h->chunk_id + h->num_records);
  if (a == ReplicaCore::Accept::diverged) {
    if (link_) link_->stop();
    link_.reset();
    ChunkFrame f;
    f.chunk_id = h->chunk_id;
    f.num_records = h->num_records;
    return end(diverged(f));
  }
  if (a == ReplicaCore::Accept::repeat) {
    // The owner spent a credit on a repeat the consumer does not get.
    st_.repeats_dropped += 1;
    top_up_owner();
    return;
  }
  auto f = std::make_shared<ChunkFrame>();
  f->chunk_id = h->chunk_id;
  f->num_records = h->num_records;
  uint64_t committed = m.version >= 2 ? m.committed_chunk_id : h->chunk_id;
  // The committed chunk holds at least one message.
  if (m.version >= 2) core_.known_up_to(m.committed_chunk_id + 1);
  proto::encode_deliver_head(version_, sub_id_, committed, *h, &f->bytes);
  BytesView body = m.chunk.substr(proto::kOsirisChunkHeaderSize);
  f->bytes.append(body.data(), body.size());
  st_.forwarded_chunks += 1;
  if (env_.forwarded_chunks) *env_.forwarded_chunks += 1;
  send(std::move(f));
}

}  // namespace strata::server
