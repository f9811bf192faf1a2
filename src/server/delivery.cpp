#include "server/delivery.h"

#include <fcntl.h>
#include <fmt/format.h>

#include <algorithm>
#include <asio/post.hpp>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "common/crc32.h"
#include "log/entries.h"
#include "proto/commands.h"

namespace strata::server {

namespace {

// The chunk's wire CRC if the log stored it when writing (chunk version 2
// on); else it is computed at delivery over the bytes read into memory.
std::optional<uint32_t> stored_wire_crc(const log::ChunkHeader& h) {
  if (h.wire_crc_known()) return h.wire_crc;
  return std::nullopt;
}

// The last Deliver of the batch's last frame while it may take more chunks
// (DeliveryOptions::coalesce_bytes).
struct OpenDeliver {
  size_t at = 0;  // where its head starts in the frame's bytes
  proto::OsirisChunkHeader header;
  uint64_t committed_id = 0;
};

struct ReadBatch {
  std::vector<std::shared_ptr<ChunkFrame>> frames;
  uint32_t chunks = 0;  // Deliver frames in frames (a frame may hold several)
  uint64_t coalesced = 0;
  std::optional<OpenDeliver> open;
  uint64_t skipped = 0;
  uint64_t filtered = 0;
  uint64_t crc_computed = 0;
  uint64_t sendfile = 0;
  bool caught_up = false;
  bool at_limit = false;     // caught up with the delivery limit, not the log
  uint64_t next_offset = 0;  // the reader's, when caught up
  std::optional<Error> error;
};

}  // namespace

proto::OsirisChunkHeader osiris_header_for(const log::ChunkHeader& h, uint32_t crc) {
  proto::OsirisChunkHeader o;
  o.chunk_type = uint8_t(h.type);
  o.num_entries = h.num_entries;
  o.num_records = h.num_records;
  o.timestamp_ms = h.timestamp_ms;
  o.epoch = h.epoch;
  o.chunk_id = h.first_offset;
  o.crc = crc;
  o.data_len = h.data_len;
  o.trailer_len = 0;  // our trailer is never sent
  o.bloom_size = 0;
  return o;
}

bool joinable(const proto::OsirisChunkHeader& open, const log::ChunkHeader& next, uint64_t limit) {
  return next.num_records == next.num_entries && open.epoch == next.epoch &&
         open.chunk_id + open.num_records == next.first_offset &&
         open.num_entries + uint32_t(next.num_entries) <= 0xFFFF &&
         open.num_records <= 0xFFFFFFFFu - next.num_records &&
         uint64_t(open.data_len) + next.data_len <= limit;
}

bool only_simple_chunk(const log::ChunkHeader& h, BytesView data) {
  return h.num_records == h.num_entries && log::only_simple_entries(data);
}

JoinRole join_role(const log::ChunkHeader& h, BytesView data, bool joins, uint64_t limit) {
  JoinRole r;
  r.simple = (joins || h.data_len < limit) && only_simple_chunk(h, data);
  r.takes_joins = r.simple && h.data_len < limit;
  return r;
}

void join_into(proto::OsirisChunkHeader* open, const log::ChunkHeader& next, uint32_t crc) {
  open->num_entries = uint16_t(open->num_entries + next.num_entries);
  open->num_records += next.num_records;
  open->crc = crc32_zlib_combine(open->crc, crc, next.data_len);
  open->data_len += next.data_len;
}

// What read jobs share with the delivery: the reader (used by one job at a
// time) and what the commit listener updates.
struct Delivery::Source {
  std::unique_ptr<tier::StreamReader> reader;
  std::shared_ptr<DeliveryLimit> limit;
  std::atomic<uint64_t> committed_chunk_id{0};
  std::atomic<bool> waiting{false};
  // A chunk read when the batch had its Delivers already, to see whether it
  // joined the last one; it did not, so the next read job starts with it.
  // (Its bytes stay valid: the reader is not called before it is used.)
  std::optional<tier::TieredChunk> carry;
};

namespace {

bool goes_by_sendfile(const tier::TieredChunk& c, const DeliveryOptions& o) {
  return o.use_sendfile && c.file && c.file->native_handle() >= 0 && stored_wire_crc(c.header) &&
         c.header.data_len >= o.sendfile_min_bytes;
}

// Whether `c` may go into the batch's open Deliver, by its header: in
// memory, and joinable() — the next offset (a chunk not delivered in
// between, e.g. of another type, would shift every offset after it), one
// epoch, within the entry count and the size, and no sub-batch (as many
// records as entries; add_frame checks the entries themselves). Only chunks
// of simple entries are joined: the JavaScript client 1.0.0 reads a chunk
// whose first entry is simple as simple entries only, and one whose first is
// a sub-batch as that one sub-batch.
bool joins_open(const tier::TieredChunk& c, const ReadBatch& b, const DeliveryOptions& o) {
  return b.open && !o.filter && !goes_by_sendfile(c, o) &&
         joinable(b.open->header, c.header, o.coalesce_bytes);
}

// The filter a chunk keeps (log/chunk_filter.h; empty: none), from its
// trailer: in the chunk's bytes when it was read, else one small pread of
// the trailer's first section.
Result<BytesView> chunk_filter(const tier::TieredChunk& c, Bytes* buf) {
  const auto& h = c.header;
  if (h.trailer_len == 0) return BytesView();
  const std::string where = fmt::format("chunk at offset {}", h.first_offset);
  if (!c.bytes.empty()) {
    return log::chunk_filter_of(c.bytes.substr(log::kChunkHeaderSize + h.data_len, h.trailer_len),
                                where);
  }
  const size_t n = std::min<size_t>(h.trailer_len, 2 + log::kMaxChunkFilterBytes);
  buf->resize(n);
  STRATA_TRY(read_exact(*c.file, c.position + log::kChunkHeaderSize + h.data_len, buf->data(), n));
  return log::chunk_filter_of(*buf, where);
}

// Where a chunk ends in the local log; none for a remote chunk.
std::optional<node::LogMark> end_of(const tier::TieredChunk& c) {
  if (c.tier != tier::Tier::local) return std::nullopt;
  return node::LogMark{c.segment_first_offset, c.position + c.header.total_size()};
}

// The batch's last frame when it is in memory and has room for `size`
// more bytes (a frame holds at least one chunk, however large), else a new
// one starting at chunk `first_offset`.
ChunkFrame* frame_with_room(ReadBatch* b, uint64_t first_offset, uint64_t size,
                            uint64_t batch_bytes) {
  ChunkFrame* f = b->frames.empty() ? nullptr : b->frames.back().get();
  if (f && !f->file && f->bytes.size() + size <= std::max<uint64_t>(batch_bytes, size)) return f;
  auto nf = std::make_shared<ChunkFrame>();
  nf->chunk_id = first_offset;
  nf->chunks = 0;
  f = nf.get();
  b->frames.push_back(std::move(nf));
  return f;
}

// Adds one chunk of a copy subscription (DeliveryOptions::copy) to the
// batch's last frame, or to a new one when that has no room: its osiris
// header says the data is followed by a trailer of the stored chunk's
// header and trailer, so the copier rebuilds the stored chunk whole and
// any osiris reader passes over it.
Result<bool> add_copy_frame(const tier::TieredChunk& c, const DeliveryOptions& o,
                            uint64_t committed, ReadBatch* b, uint64_t* mem) {
  const log::ChunkHeader& h = c.header;
  if (c.bytes.size() != h.total_size()) {
    return Error(Errc::internal,
                 fmt::format("copy subscription: the chunk at offset {} was not read whole",
                             h.first_offset));
  }
  proto::OsirisChunkHeader oh = osiris_header_for(h, log::chunk_wire_crc(h, c.data()));
  oh.trailer_len = uint32_t(log::kChunkHeaderSize + h.trailer_len);
  const size_t head = proto::deliver_head_size(o.version);
  const uint64_t size = head + h.data_len + log::kChunkHeaderSize + h.trailer_len;
  ChunkFrame* f = frame_with_room(b, h.first_offset, size, o.batch_bytes);
  proto::encode_deliver_head(o.version, o.subscription_id, std::max(committed, h.first_offset), oh,
                             &f->bytes);
  f->bytes.append(c.data());
  f->bytes.append(c.bytes.substr(0, log::kChunkHeaderSize));
  f->bytes.append(c.bytes.substr(log::kChunkHeaderSize + h.data_len));
  f->num_records += h.num_records;
  f->next_offset = h.next_offset();
  f->chunk_ends.push_back(h.next_offset());
  f->end_mark = end_of(c);
  f->chunks += 1;
  b->chunks += 1;
  *mem += size;
  return true;
}

// Adds one chunk to the batch: a frame of its own when its body goes by
// sendfile, else (head and body in memory, the body copied once) joined to
// the open Deliver, or appended to the batch's last frame when that one is
// in memory too and has room. False (nothing added): the chunk did not join
// after all and the batch has max_chunks Delivers; the caller carries it.
Result<bool> add_frame(const tier::TieredChunk& c, const DeliveryOptions& o, uint64_t committed,
                       uint32_t max_chunks, ReadBatch* b, uint64_t* mem) {
  if (o.copy) return add_copy_frame(c, o, committed, b, mem);
  // A filtered subscription: a chunk the filter rules out is passed over
  // (true: nothing more to do with it). The others go out as any chunk:
  // osiris skips the filter bytes when it sends a user chunk to a
  // consumer, and clients read the data right after the 48-byte header.
  if (o.filter) {
    Bytes filter_buf;
    STRATA_ASSIGN_OR_RETURN(BytesView filter, chunk_filter(c, &filter_buf));
    if (!o.filter->may_match(filter)) {
      b->filtered += 1;
      return true;
    }
  }
  const size_t head = proto::deliver_head_size(o.version);
  const uint64_t data_pos = c.position + log::kChunkHeaderSize;
  std::optional<uint32_t> crc = stored_wire_crc(c.header);
  const uint64_t committed_id = std::max(committed, c.header.first_offset);
  if (goes_by_sendfile(c, o)) {
    const int fd = c.file->native_handle();
    b->open.reset();
    auto f = std::make_shared<ChunkFrame>();
    f->chunk_id = c.header.first_offset;
    f->num_records = c.header.num_records;
    f->next_offset = c.header.first_offset + c.header.num_records;
    f->end_mark = end_of(c);
    proto::encode_deliver_head(o.version, o.subscription_id, committed_id,
                               osiris_header_for(c.header, *crc), &f->bytes);
    f->file = FileSpan{c.file, fd, data_pos, c.header.data_len};
    b->sendfile += 1;
    b->chunks += 1;
    *mem += f->bytes.size();
    // Pull the span into the page cache here, on the pool, so the event
    // loop's sendfile finds it there instead of waiting for the disk.
    ::readahead(fd, off64_t(data_pos), c.header.data_len);
    b->frames.push_back(std::move(f));
    return true;
  }
  ChunkFrame* f = b->frames.empty() ? nullptr : b->frames.back().get();
  // Into the open Deliver (always the last frame's last): its entries run
  // on into this chunk's.
  bool join = joins_open(c, *b, o);
  uint64_t size = (join ? 0 : head) + c.header.data_len;
  if (!join) f = frame_with_room(b, c.header.first_offset, size, o.batch_bytes);
  const size_t at = f->bytes.size();
  f->bytes.resize(at + size);
  char* body = f->bytes.data() + at + (join ? 0 : head);
  if (c.file) {
    Status s = read_exact(*c.file, data_pos, body, c.header.data_len);
    if (!s.ok()) {
      // Nothing of this chunk is sent: the frames before it go out, then
      // the error.
      f->bytes.resize(at);
      if (f->chunks == 0) b->frames.pop_back();
      return s.error();
    }
  } else {
    BytesView d = c.data();
    std::memcpy(body, d.data(), d.size());
  }
  const JoinRole role =
      join_role(c.header, BytesView(body, c.header.data_len), join, o.coalesce_bytes);
  if (join && !role.simple) {
    // A sub-batch after all (one record): this chunk goes out on its own.
    if (b->chunks >= max_chunks) {
      f->bytes.resize(at);
      return false;
    }
    join = false;
    size = head + c.header.data_len;
    f->bytes.resize(at + size);
    std::memmove(f->bytes.data() + at + head, f->bytes.data() + at, c.header.data_len);
    body = f->bytes.data() + at + head;
  }
  if (!crc) {
    crc = crc32_zlib(BytesView(body, c.header.data_len));
    b->crc_computed += 1;
  }
  f->num_records += c.header.num_records;
  f->next_offset = c.header.first_offset + c.header.num_records;
  f->end_mark = end_of(c);
  *mem += size;
  Bytes h;
  if (join) {
    // One chunk of both: the first's id, timestamp and epoch, the counts
    // and lengths added, the CRC of the joined data from the two CRCs.
    OpenDeliver& d = *b->open;
    join_into(&d.header, c.header, *crc);
    proto::encode_deliver_head(o.version, o.subscription_id, d.committed_id, d.header, &h);
    std::memcpy(f->bytes.data() + d.at, h.data(), head);
    b->coalesced += 1;
    f->joined += 1;
    return true;
  }
  const proto::OsirisChunkHeader oh = osiris_header_for(c.header, *crc);
  proto::encode_deliver_head(o.version, o.subscription_id, committed_id, oh, &h);
  std::memcpy(f->bytes.data() + at, h.data(), head);
  f->chunks += 1;
  b->chunks += 1;
  b->open.reset();
  if (role.takes_joins) b->open = OpenDeliver{at, oh, committed_id};
  return true;
}

ReadBatch read_batch(Delivery::Source& src, const DeliveryOptions& o, uint32_t max_chunks) {
  ReadBatch b;
  uint64_t mem = 0;
  if (src.carry) {
    // Read by the job before, at or below the limit then; a fresh batch
    // takes it as its first Deliver.
    tier::TieredChunk c = std::move(*src.carry);
    src.carry.reset();
    auto added = add_frame(c, o, src.committed_chunk_id.load(std::memory_order_relaxed), max_chunks,
                           &b, &mem);
    if (!added.ok()) {
      b.error = std::move(added).error();
      return b;
    }
  }
  // With its Delivers complete the batch still takes chunks that join the
  // last one.
  while ((b.chunks < max_chunks || b.open) && mem < o.batch_bytes) {
    // The limit is a chunk boundary (a persisted manifest ends after a
    // whole chunk), so the reader's position — a chunk's first offset, or
    // the requested offset inside the first chunk — is at or above it only
    // when the next chunk is.
    if (src.limit && src.reader->next_offset() >= src.limit->end()) {
      b.caught_up = true;
      b.at_limit = true;
      b.next_offset = src.reader->next_offset();
      break;
    }
    // Located (header only): add_frame decides by the header whether the
    // body goes by sendfile or is read into memory. (Guessing a chunk's size
    // from the previous one to read small ones through the reader's
    // read-ahead misfires: group commit mixes small and large chunks.)
    auto r = o.locate ? src.reader->next_chunk_location() : src.reader->next_chunk();
    if (!r.ok()) {
      b.error = std::move(r).error();
      break;
    }
    if (!*r) {
      b.caught_up = true;
      b.next_offset = src.reader->next_offset();
      break;
    }
    const tier::TieredChunk& c = **r;
    // A copy holds every chunk: its offsets are the owner's.
    if (c.header.type != log::ChunkType::user && !o.copy) {
      b.skipped += 1;
      continue;
    }
    if (b.chunks >= max_chunks && !joins_open(c, b, o)) {
      src.carry = c;
      break;
    }
    auto added = add_frame(c, o, src.committed_chunk_id.load(std::memory_order_relaxed), max_chunks,
                           &b, &mem);
    if (!added.ok()) {
      b.error = std::move(added).error();
      break;
    }
    if (!*added) {
      src.carry = c;
      break;
    }
  }
  return b;
}
}  // namespace

Delivery::Delivery(Strand strand, TaskContext tasks, DeliveryOptions opts)
    : strand_(std::move(strand)), tasks_(std::move(tasks)), opts_(opts) {}

Delivery::~Delivery() {
  if (listener_ != 0 && stream_) stream_->unsubscribe(listener_);
  drop_queue();
}

void Delivery::drop_queue() {
  if (opts_.outbound) opts_.outbound->sub(queued_bytes_);
  queue_.clear();
  queued_chunks_ = 0;
  queued_bytes_ = 0;
}

std::shared_ptr<Delivery> Delivery::start(std::unique_ptr<tier::StreamReader> reader,
                                          std::shared_ptr<node::StreamHandle> stream,
                                          std::shared_ptr<FrameSink> sink, Strand strand,
                                          TaskContext tasks, DeliveryOptions opts,
                                          uint16_t initial_credit,
                                          std::function<void(const Error&)> on_error,
                                          std::shared_ptr<DeliveryLimit> limit) {
  opts.batch_chunks = std::max<uint32_t>(opts.batch_chunks, 1);
  std::shared_ptr<Delivery> d(new Delivery(std::move(strand), std::move(tasks), opts));
  d->src_ = std::make_shared<Source>();
  d->st_.next_offset = reader->next_offset();
  d->src_->reader = std::move(reader);
  d->src_->limit = limit;
  d->limit_ = std::move(limit);
  d->sink_ = std::move(sink);
  d->stream_ = std::move(stream);
  d->on_error_ = std::move(on_error);
  d->credit_ = initial_credit;
  // The listener runs on the stream's writer thread: it only flips a flag and,
  // when the delivery was waiting, posts a wake-up to the strand.
  std::weak_ptr<Delivery> weak = d;
  std::weak_ptr<Source> wsrc = d->src_;
  Strand st = d->strand_;
  std::shared_ptr<IoLifetime> lifetime = d->tasks_.lifetime;
  d->listener_ = d->stream_->subscribe([weak, wsrc, st, lifetime](const log::CommittedChunk& c) {
    auto src = wsrc.lock();
    if (!src) return;
    uint64_t prev = src->committed_chunk_id.load(std::memory_order_relaxed);
    while (prev < c.header.first_offset &&
           !src->committed_chunk_id.compare_exchange_weak(prev, c.header.first_offset)) {
    }
    if (!src->waiting.exchange(false)) return;
    std::shared_lock l(lifetime->mu);
    if (!lifetime->alive) return;
    asio::post(st, [weak] {
      if (auto self = weak.lock()) self->woken();
    });
  });
  asio::post(d->strand_, [d] { d->pump(); });
  return d;
}

void Delivery::add_credit(uint16_t n) {
  credit_ = uint32_t(std::min<uint64_t>(uint64_t(credit_) + n, UINT32_MAX));
  if (opts_.on_copy_ack && !unacked_.empty()) {
    uint64_t next = 0;
    for (uint16_t i = 0; i < n && !unacked_.empty(); ++i) {
      next = unacked_.front();
      unacked_.pop_front();
    }
    opts_.on_copy_ack(next);
  }
  pump();
}

void Delivery::stop() {
  if (stopped_) return;
  stopped_ = true;
  drop_queue();
  if (listener_ != 0) stream_->unsubscribe(listener_);
  listener_ = 0;
}

void Delivery::fail(const Error& e) {
  if (stopped_) return;
  stop();
  if (on_error_) on_error_(e);
}

void Delivery::woken() {
  if (stopped_ || !caught_up_) return;
  caught_up_ = false;
  st_.wakeups += 1;
  pump();
}

void Delivery::arm_wait(uint64_t next_offset) {
  caught_up_ = true;
  src_->waiting.store(true);
  // A commit between the read and the store above found `waiting` false:
  // look again, so no wake-up is lost.
  if (stream_->committed_next() > next_offset && src_->waiting.exchange(false)) caught_up_ = false;
}

void Delivery::arm_limit_wait(uint64_t next_offset) {
  caught_up_ = true;
  st_.limit_waits += 1;
  std::weak_ptr<Delivery> weak = weak_from_this();
  Strand st = strand_;
  std::shared_ptr<IoLifetime> lifetime = tasks_.lifetime;
  // Runs on the uploader's strand (or here, at once): only posts.
  limit_->await_beyond(next_offset, [weak, st, lifetime](Status s) {
    std::shared_lock l(lifetime->mu);
    if (!lifetime->alive) return;
    asio::post(st, [weak, s = std::move(s)] {
      auto self = weak.lock();
      if (!self) return;
      if (!s.ok()) {
        return self->fail(Error(s.error()).with_context(
            "waiting at the delivery limit (what the confirm mode lets consumers read: the "
            "persisted end under remote, the copies' majority under replicated; the node's lease "
            "in a cluster)"));
      }
      self->woken();
    });
  });
}

void Delivery::pump() {
  if (stopped_) return;
  // Frames go out within the credit: a frame of k chunks takes k.
  if (!sending_ && !queue_.empty() && credit_ >= queue_.front()->chunks) send_next();
  if (queue_.empty() && !sending_ && pending_error_) {
    Error e = std::move(*pending_error_);
    pending_error_.reset();
    return fail(e);
  }
  if (reading_ || caught_up_ || pending_error_ || awaiting_room_) return;
  if (credit_ <= queued_chunks_ && queued_chunks_ != 0) return;
  // The connection's client has not read what it has (frame_channel.h):
  // nothing more is read for it until it does.
  if (sink_->congested()) return await_room();
  // One batch read ahead of the frame being sent is enough to keep the
  // socket busy; reading on, up to the credit, would hold in memory all a
  // slow consumer with a large credit has not read. The send's end pumps
  // again.
  if (queued_bytes_ >= opts_.batch_bytes) return;
  // The server holds more than its limit for its clients: a batch per
  // subscription at a time (the send's end, or a credit, pumps again).
  if (opts_.outbound && opts_.outbound->over() && (sending_ || !queue_.empty())) return;
  if (credit_ > queued_chunks_) {
    start_read(std::min(credit_ - queued_chunks_, opts_.batch_chunks));
  } else if (queued_chunks_ == 0) {
    // No credit left: read the next chunk ahead, so that the next credit is
    // answered at once rather than after a read on the pool — a client
    // that grants one credit per chunk it has processed (the JavaScript
    // client's default) waits for each. At most one chunk is held so.
    st_.read_ahead += 1;
    start_read(1);
  }
}

uint64_t Delivery::lag() const {
  const uint64_t end = stream_->committed_next();
  return end > st_.next_offset ? end - st_.next_offset : 0;
}

node::LagBytes Delivery::lag_bytes() const {
  return stream_->lag_bytes(st_.end_mark, st_.next_offset);
}

void Delivery::await_room() {
  awaiting_room_ = true;
  std::weak_ptr<Delivery> weak = weak_from_this();
  Strand st = strand_;
  sink_->when_room([weak, st] {
    asio::post(st, [weak] {
      auto self = weak.lock();
      if (!self) return;
      self->awaiting_room_ = false;
      self->pump();
    });
  });
}

void Delivery::send_next() {
  // Read below the limit, but the limit may have fallen since (only the
  // lease's does: lease_limit): nothing more goes out.
  if (limit_ && queue_.front()->chunk_id >= limit_->end()) {
    drop_queue();
    return arm_limit_wait(st_.next_offset);
  }
  sending_ = true;
  auto f = queue_.front();
  queue_.pop_front();
  credit_ -= f->chunks;
  queued_chunks_ -= f->chunks;
  queued_bytes_ -= f->bytes.size();
  if (opts_.outbound) opts_.outbound->sub(f->bytes.size());
  if (opts_.on_copy_ack)
    unacked_.insert(unacked_.end(), f->chunk_ends.begin(), f->chunk_ends.end());
  std::weak_ptr<Delivery> weak = weak_from_this();
  Strand st = strand_;
  sink_->send(f, [weak, st, f](std::error_code ec) {
    asio::post(st, [weak, f, ec] {
      auto self = weak.lock();
      if (!self) return;
      self->sending_ = false;
      if (self->stopped_) return;
      if (ec) {
        return self->fail(Error(Errc::io, "writing a Deliver frame of chunk " +
                                              std::to_string(f->chunk_id) + ": " + ec.message()));
      }
      self->st_.chunks += f->chunks;
      self->st_.writes += 1;
      self->st_.records += f->num_records;
      self->st_.bytes += f->wire_size();
      if (f->next_offset >= self->st_.next_offset) {
        self->st_.next_offset = f->next_offset;
        self->st_.end_mark = f->end_mark;
      }
      self->pump();
    });
  });
}

void Delivery::start_read(uint32_t n) {
  reading_ = true;
  st_.read_jobs += 1;
  auto src = src_;
  DeliveryOptions o = opts_;
  std::weak_ptr<Delivery> weak = weak_from_this();
  run_task<ReadBatch>(
      tasks_, strand_, opts_.read_deadline, "deliver: read chunks",
      [src, o, n] { return read_batch(*src, o, n); },
      [weak](TaskOutcome<ReadBatch> out) {
        auto self = weak.lock();
        if (!self) return;
        self->reading_ = false;
        if (self->stopped_) return;
        if (out.end != TaskEnd::completed) return self->fail(out.error);
        ReadBatch& b = *out.value;
        self->queued_chunks_ += b.chunks;
        self->st_.skipped_chunks += b.skipped;
        self->st_.filtered_chunks += b.filtered;
        self->st_.coalesced_chunks += b.coalesced;
        self->st_.crc_computed += b.crc_computed;
        self->st_.sendfile_chunks += b.sendfile;
        self->st_.memory_chunks += b.chunks - b.sendfile;
        for (auto& f : b.frames) {
          self->queued_bytes_ += f->bytes.size();
          if (self->opts_.outbound) self->opts_.outbound->add(f->bytes.size());
          self->queue_.push_back(std::move(f));
        }
        if (b.error) {
          self->pending_error_ = std::move(b.error);
        } else if (b.at_limit) {
          self->arm_limit_wait(b.next_offset);
        } else if (b.caught_up) {
          self->arm_wait(b.next_offset);
        }
        self->pump();
      });
}

}  // namespace strata::server
