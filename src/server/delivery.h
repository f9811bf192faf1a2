// Delivery: the Deliver frames of one subscription (RabbitMQ Stream protocol,
// key 0x0008), read from a tier::StreamReader — remote fragments, then local
// segments — and handed to the connection one frame at a time, within the
// subscription's credit.
//
// A Deliver frame is
//   uint32 size | uint16 key 0x0008 | uint16 version (1 or 2) |
//   uint8 subscription id | [v2: uint64 committed chunk id] |
//   48-byte osiris chunk header | the chunk's entries
// The osiris header is built from our chunk header (trailer_len 0, bloom
// size 0: our trailer and chunk types other than user are never sent) with
// the chunk's wire CRC (zlib CRC32 of the entries). Like RabbitMQ, a chunk is
// delivered whole: records before the subscription's offset in the first
// chunk are skipped by the client. A wire chunk may be several stored
// chunks joined (DeliveryOptions::coalesce_bytes).
//
// What is copied (docs/ARCHITECTURE.md, "Delivering chunks"):
//  - local chunks whose wire CRC is stored and whose data section is at
//    least sendfile_min_bytes go out by sendfile(2) from the segment file:
//    the body never enters user space (ChunkFrame::file);
//  - smaller local chunks are read into memory (one pread of the body
//    after the header's) and consecutive ones share one ChunkFrame, so they
//    go out in one write: a sendfile per chunk costs a readahead, a write
//    of the head, the sendfile and a strand round trip, more than copying
//    a small body
//    (docs/BENCHMARKS.md, "Stream protocol: strata vs RabbitMQ");
//  - with coalesce_bytes set, consecutive in-memory chunks (one epoch,
//    offsets running on) go out as one chunk: entries unchanged, counts
//    added, the CRC combined from theirs (common/crc32.h);
//  - local chunks without a stored wire CRC (older chunk versions), and any
//    local chunk when the file has no descriptor, are read once into the
//    frame and the CRC computed over that copy;
//  - remote chunks are copied once from the reader's prefetch buffer into
//    the frame (the buffer is reused by the reader's next call).
//
// Threads: every method runs on the connection's strand. Reading — a pool
// job (common/task.h), so a read that hangs ends at its deadline — never
// happens on the event loop. A caught-up delivery holds no thread: it
// waits for the log's commit listener. Memory: at most one batch being
// sent and one being read, each at most batch_bytes of in-memory bodies
// plus one chunk, and never more chunks than the credit — but for one
// chunk read ahead when the credit is used up, so that the next credit is
// answered without a read on the pool (clients granting one credit per
// processed chunk wait for each). A read starts only while less than a
// batch of in-memory bodies waits unsent and the connection is not
// congested (FrameSink::congested): a consumer granting a large credit and
// reading slowly does not make the server read its stream into memory.
// Credit is taken when a frame is sent.
#pragma once

#include <sys/sendfile.h>

#include <asio/buffer.hpp>
#include <asio/error.hpp>
#include <asio/write.hpp>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <system_error>
#include <vector>

#include "common/bytes.h"
#include "common/fs.h"
#include "common/result.h"
#include "common/task.h"
#include "log/chunk.h"
#include "log/chunk_filter.h"
#include "node/stream_handle.h"
#include "proto/osiris_chunk.h"
#include "server/delivery_limit.h"
#include "server/server_counters.h"
#include "tier/stream_reader.h"

namespace strata::server {

// File bytes a frame sends with sendfile(2) after its in-memory part.
struct FileSpan {
  std::shared_ptr<File> file;  // keeps the descriptor open until sent
  int fd = -1;
  uint64_t offset = 0;
  uint64_t length = 0;
};

// One Deliver frame (proto::encode_deliver_head + the chunk's entries), ready to write: `bytes`
// (the frame head, and for in-memory bodies the body too), then `file` if set.
// A frame with an in-memory body may be followed in `bytes` by further
// whole Deliver frames (never one with a file part): `chunks` counts them.
struct ChunkFrame {
  Bytes bytes;
  std::optional<FileSpan> file;
  uint64_t chunk_id = 0;  // of the first chunk
  uint32_t num_records = 0;
  uint32_t chunks = 1;
  uint32_t joined = 0;       // stored chunks that went out inside an earlier one of its Delivers
  uint64_t next_offset = 0;  // the offset after its last record
  // Where its last chunk ends in the local log (none: a remote chunk).
  std::optional<node::LogMark> end_mark;
  // A copy subscription's frame: each chunk's next offset, in order.
  std::vector<uint64_t> chunk_ends;

  uint64_t wire_size() const { return bytes.size() + (file ? file->length : 0); }
};

// The osiris header a chunk goes out with: our header's fields, `crc` as
// the data CRC, trailer_len 0 and bloom size 0 (proto/osiris_chunk.h).
proto::OsirisChunkHeader osiris_header_for(const log::ChunkHeader& h, uint32_t crc);

// Joining stored chunks into one wire chunk (DeliveryOptions::coalesce_bytes;
// docs/formats/protocol-frames.md "Deliver frames from chunks"). Whether a chunk with header
// `next` may follow the wire chunk `open` — itself only chunks of simple
// entries — within `limit` data bytes: the same epoch, the next offset, at
// most 65535 entries, and as many records as entries (the caller checks the
// entries themselves with only_simple_chunk).
bool joinable(const proto::OsirisChunkHeader& open, const log::ChunkHeader& next, uint64_t limit);
// Whether a chunk's data is simple entries only (no sub-batch, even of one
// record): the only chunks joined, as `open` or as `next`.
bool only_simple_chunk(const log::ChunkHeader& h, BytesView data);
// The join policy for one chunk that `joins` the open wire chunk by its
// header (joinable) or not: `simple` — its data is simple entries, looked
// at only when it joins or is under `limit` (a chunk that is neither goes
// out as stored whatever it holds); a chunk that joins but is not simple
// goes out on its own after all — and `takes_joins` — not joined, it opens
// a wire chunk later chunks may join: simple and under `limit`.
struct JoinRole {
  bool simple = false;
  bool takes_joins = false;
};
JoinRole join_role(const log::ChunkHeader& h, BytesView data, bool joins, uint64_t limit);
// `open` extended by that chunk, whose data has zlib CRC `crc`: counts and
// length added, the CRC combined.
void join_into(proto::OsirisChunkHeader* open, const log::ChunkHeader& next, uint32_t crc);

// How a connection writes frames: in order with its other frames (e.g. a
// write queue that calls async_write_frame below). The delivery calls send()
// on its strand with at most one frame outstanding, and sends the next after
// `done`, which must be called exactly once, on any thread (the delivery
// posts back to its strand).
class FrameSink {
 public:
  virtual ~FrameSink() = default;
  virtual void send(std::shared_ptr<const ChunkFrame> frame,
                    std::function<void(std::error_code)> done) = 0;
  // Whether the connection holds so much its client has not read yet that
  // nothing more should be read for it now (frame_channel.h). On the
  // delivery's strand, which is the connection's.
  virtual bool congested() const { return false; }
  // Calls `fn` once the connection is no longer congested, on its strand
  // (at once when it is not; never when the connection closes first).
  virtual void when_room(std::function<void()> fn) { fn(); }
};

// Writes one frame to an Asio stream socket (TCP or local): the in-memory
// part with async_write, the file part with sendfile(2) on the socket in
// non-blocking mode, waiting for writability with async_wait when the
// socket's buffer is full. `done` gets the first error, or success once
// every byte is handed to the kernel. The frame stays alive until then.
// sendfile(2) raises SIGPIPE when the peer has gone: the process must ignore
// that signal (`strata serve` does, src/cli/cmd_serve.cpp).
template <class Socket>
void async_write_frame(Socket& sock, std::shared_ptr<const ChunkFrame> frame,
                       std::function<void(std::error_code)> done);

struct DeliveryOptions {
  uint8_t subscription_id = 0;
  uint16_t version = 1;  // Deliver v1, or v2 (committed chunk id) when declared
  // Chunks found by their headers alone (the reader's next_chunk_location):
  // a local chunk's body then goes by sendfile (use_sendfile) or is read
  // straight into its frame. Else (and for a copy) the reader reads each
  // chunk whole and checks it, and the frame copies its body from there.
  bool locate = true;
  // Located local chunks with a stored wire CRC by sendfile (else read into
  // the frame: over TLS, whose records are encrypted in user space).
  bool use_sendfile = true;
  // ... if the data section has at least this many bytes; smaller chunks
  // are read into memory and share one write.
  uint64_t sendfile_min_bytes = 64 << 10;
  // Consecutive chunks read together (of one epoch, at most 65535 entries
  // in all) are delivered as one chunk of up to this many data bytes
  // (0: every chunk as stored). Clients pay per chunk (a credit, a
  // callback, a log line); a stream written by small publishes would
  // otherwise reach them as many small chunks. The server's default is
  // ServerSettings::coalesce_bytes (server/serve_config.h).
  uint64_t coalesce_bytes = 0;
  // Subscribe's filter.N / match-unfiltered: only the chunks whose filter
  // may hold a wanted message are sent (as any chunk: like osiris, without
  // the filter bytes). Null: every chunk. Filtered deliveries never join
  // chunks.
  std::shared_ptr<const log::FilterMatcher> filter;
  // A replica's copy subscription (a peer's Subscribe with the property
  // kCopyProperty, server/replica_copier.h): every chunk, of any type, goes
  // out whole — its osiris trailer holds the stored header and trailer
  // after the data (docs/formats/protocol-frames.md, "Copy subscriptions")
  // — read into memory, never joined nor filtered.
  bool copy = false;
  // A copy subscription: the copier grants one credit per chunk it has
  // appended to its copy (replica_copier.h), so each credit after the
  // first acknowledges the oldest chunk sent and not yet acknowledged;
  // called on the strand with the offset after it (replica_acks.h).
  std::function<void(uint64_t next)> on_copy_ack;
  uint32_t batch_chunks = 32;         // chunks one read job prepares, at most
  uint64_t batch_bytes = 1ull << 20;  // in-memory bodies one read job prepares
  // (also the most one ChunkFrame of several chunks holds)
  std::chrono::milliseconds read_deadline{std::chrono::minutes(15)};
  // The server's count of bytes held for clients (server_counters.h): the
  // frames read and not yet sent are in it; past its limit a subscription
  // reads only while it has nothing read or being sent. Null: not counted.
  OutboundBytes* outbound = nullptr;
};

struct DeliveryStats {
  // The offset after the last record written (before the first frame:
  // where the reader started). A filtered subscription passes over chunks
  // without moving it.
  uint64_t next_offset = 0;
  // Where the last chunk written ends in the local log (none: nothing
  // written yet, or a remote chunk).
  std::optional<node::LogMark> end_mark;
  uint64_t chunks = 0;   // Deliver frames (chunks) written
  uint64_t writes = 0;   // ChunkFrames written (several small chunks share one)
  uint64_t records = 0;  // records in them
  uint64_t bytes = 0;    // frame bytes written
  // Frames prepared (counted when read, before they are written):
  uint64_t sendfile_chunks = 0;   // bodies to send from the segment file
  uint64_t memory_chunks = 0;     // bodies in memory
  uint64_t crc_computed = 0;      // chunks whose wire CRC was computed at delivery
  uint64_t skipped_chunks = 0;    // non-user chunks not delivered
  uint64_t filtered_chunks = 0;   // chunks the subscription's filter ruled out
  uint64_t coalesced_chunks = 0;  // stored chunks delivered inside the previous one
  uint64_t read_jobs = 0;
  uint64_t wakeups = 0;      // caught up, then woken by a commit
  uint64_t limit_waits = 0;  // stopped at the delivery limit, waiting for it to move
  uint64_t read_ahead = 0;   // read jobs started with the credit used up (one chunk each)
};

class Delivery : public std::enable_shared_from_this<Delivery> {
 public:
  // Starts delivering from `reader` (opened by the connection at the
  // subscription's offset spec, e.g. Node::open_reader) to `sink`.
  // `stream` is the stream being read: its commit listener wakes a
  // caught-up delivery. `limit` (null: none) holds back chunks at or above its end
  // until it moves past them (delivery_limit.h). `on_error` runs once, on
  // the strand, when the delivery stops because a read or a write failed
  // or the limit can no longer move (not after stop()).
  static std::shared_ptr<Delivery> start(std::unique_ptr<tier::StreamReader> reader,
                                         std::shared_ptr<node::StreamHandle> stream,
                                         std::shared_ptr<FrameSink> sink, Strand strand,
                                         TaskContext tasks, DeliveryOptions opts,
                                         uint16_t initial_credit,
                                         std::function<void(const Error&)> on_error,
                                         std::shared_ptr<DeliveryLimit> limit = nullptr);
  ~Delivery();

  // Credit command: n more chunks may be sent.
  void add_credit(uint16_t n);
  // Unsubscribe or connection gone: no frame is sent after the one in
  // flight; a read in flight is dropped when it ends. Idempotent.
  void stop();
  bool stopped() const { return stopped_; }
  uint32_t credit() const { return credit_; }
  DeliveryStats stats() const { return st_; }
  // Messages committed to the stream and not yet written to this
  // subscription: the stream's committed end less stats().next_offset
  // (RabbitMQ's offset_lag).
  uint64_t lag() const;
  // The bytes of that lag (exact once a local chunk has been written).
  node::LagBytes lag_bytes() const;

  // Internal (read jobs): the reader and what it shares with them.
  struct Source;

 private:
  Delivery(Strand strand, TaskContext tasks, DeliveryOptions opts);
  void pump();
  // Reads up to `n` chunks on the pool.
  void start_read(uint32_t n);
  void send_next();
  void fail(const Error& e);
  void arm_wait(uint64_t next_offset);
  void arm_limit_wait(uint64_t next_offset);
  // Reads again once the sink is no longer congested.
  void await_room();
  void drop_queue();
  void woken();

  Strand strand_;
  TaskContext tasks_;
  DeliveryOptions opts_;
  std::shared_ptr<Source> src_;
  std::shared_ptr<FrameSink> sink_;
  std::shared_ptr<node::StreamHandle> stream_;
  std::shared_ptr<DeliveryLimit> limit_;
  uint64_t listener_ = 0;
  std::function<void(const Error&)> on_error_;
  std::deque<std::shared_ptr<const ChunkFrame>> queue_;
  uint32_t credit_ = 0;
  // A copy subscription's chunks sent and not acknowledged (on_copy_ack).
  std::deque<uint64_t> unacked_;
  uint32_t queued_chunks_ = 0;  // chunks in queue_, read but not yet sent
  uint64_t queued_bytes_ = 0;   // their bytes in memory (opts_.outbound counts them)
  bool awaiting_room_ = false;  // sink congested: FrameSink::when_room pumps again
  bool reading_ = false;
  bool sending_ = false;
  bool stopped_ = false;
  bool caught_up_ = false;              // waiting for a commit (listener armed)
  std::optional<Error> pending_error_;  // reported once the frames read before it are sent
  DeliveryStats st_;
};

// ---- async_write_frame ----

namespace detail {
template <class Socket>
void sendfile_rest(Socket& sock, std::shared_ptr<const ChunkFrame> frame, uint64_t sent,
                   std::function<void(std::error_code)> done) {
  const FileSpan& f = *frame->file;
  std::error_code ec;
  sock.native_non_blocking(true, ec);
  if (ec) return done(ec);
  while (sent < f.length) {
    off_t off = off_t(f.offset + sent);
    ssize_t n = ::sendfile(sock.native_handle(), f.fd, &off, size_t(f.length - sent));
    if (n > 0) {
      sent += uint64_t(n);
      continue;
    }
    if (n == 0) return done(std::make_error_code(std::errc::io_error));  // file shorter
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      sock.async_wait(Socket::wait_write, [&sock, frame = std::move(frame), sent,
                                           done = std::move(done)](std::error_code e) mutable {
        if (e) return done(e);
        sendfile_rest(sock, std::move(frame), sent, std::move(done));
      });
      return;
    }
    return done(std::error_code(errno, std::system_category()));
  }
  done(std::error_code());
}
}  // namespace detail

template <class Socket>
void async_write_frame(Socket& sock, std::shared_ptr<const ChunkFrame> frame,
                       std::function<void(std::error_code)> done) {
  const auto* f = frame.get();
  asio::async_write(sock, asio::buffer(f->bytes),
                    [&sock, frame = std::move(frame), done = std::move(done)](std::error_code ec,
                                                                              size_t) mutable {
                      if (ec || !frame->file) return done(ec);
                      detail::sendfile_rest(sock, std::move(frame), 0, std::move(done));
                    });
}

}  // namespace strata::server
