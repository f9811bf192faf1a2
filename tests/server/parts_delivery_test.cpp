// Delivery over a real socket pair: the bytes on the wire decode to the
// stream's chunks, the data CRC is zlib's crc32 of the entries, credit
// bounds what is sent, a caught-up delivery wakes on a commit, and the
// sendfile and in-memory paths put identical bytes on the wire.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <asio/io_context.hpp>
#include <asio/local/connect_pair.hpp>
#include <asio/local/stream_protocol.hpp>
#include <atomic>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <thread>
#include <utility>

#include "common/endian.h"
#include "common/fault_fs.h"
#include "common/fs.h"
#include "log/log_entries_util.h"
#include "log/log_files.h"
#include "log/reader.h"
#include "log/stream_log.h"
#include "proto/frame.h"
#include "server/delivery.h"
#include "support/golden.h"
#include "support/temp_dir.h"

namespace strata::server {
namespace {

using Socket = asio::local::stream_protocol::socket;

// A sink writing straight to one socket (a connection's write queue in
// miniature: the delivery keeps one frame outstanding).
class SocketSink : public FrameSink {
 public:
  explicit SocketSink(Socket& s) : sock_(s) {}
  void send(std::shared_ptr<const ChunkFrame> f,
            std::function<void(std::error_code)> done) override {
    async_write_frame(sock_, std::move(f), std::move(done));
  }

 private:
  Socket& sock_;
};

struct WireChunk {
  uint16_t version = 0;
  uint8_t subscription = 0;
  uint64_t committed = 0;
  uint8_t magic_version = 0;
  uint8_t type = 0;
  uint16_t entries = 0;
  uint32_t records = 0;
  uint64_t epoch = 0;
  uint64_t chunk_id = 0;
  uint32_t crc = 0;
  uint32_t trailer_len = 0;
  uint32_t reserved = 0;
  Bytes data;
  Bytes raw;  // the whole frame, size prefix included
};

bool read_full(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t r = ::read(fd, p, n);
    if (r <= 0) return false;
    p += r;
    n -= size_t(r);
  }
  return true;
}

// Reads one Deliver frame from the raw socket (blocking).
std::optional<WireChunk> read_frame(int fd) {
  char sz[4];
  if (!read_full(fd, sz, 4)) return std::nullopt;
  uint32_t size = get_be32(u8(sz));
  Bytes body(size, '\0');
  if (!read_full(fd, body.data(), size)) return std::nullopt;
  WireChunk w;
  w.raw = Bytes(sz, 4) + body;
  const uint8_t* p = u8(body.data());
  EXPECT_EQ(get_be16(p), proto::kDeliver);
  w.version = get_be16(p + 2);
  w.subscription = p[4];
  size_t pos = 5;
  if (w.version == 2) {
    w.committed = get_be64(p + pos);
    pos += 8;
  }
  const uint8_t* h = p + pos;
  w.magic_version = h[0];
  w.type = h[1];
  w.entries = get_be16(h + 2);
  w.records = get_be32(h + 4);
  w.epoch = get_be64(h + 16);
  w.chunk_id = get_be64(h + 24);
  w.crc = get_be32(h + 32);
  uint32_t data_len = get_be32(h + 36);
  w.trailer_len = get_be32(h + 40);
  w.reserved = get_be32(h + 44);
  pos += proto::kOsirisChunkHeaderSize;
  EXPECT_EQ(pos + data_len, size) << "frame size disagrees with data_len";
  w.data = body.substr(pos);
  return w;
}

class DeliveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log::LogOptions lo;
    lo.create_if_missing = true;
    lo.fsync = log::FsyncPolicy::never;
    lo.max_segment_bytes = 64 << 10;  // several segments
    auto l = log::StreamLog::open(dir_.sub("s"), lo);
    ASSERT_TRUE(l.ok()) << l.error().message;
    log_ = *l;
    pool_ = std::make_shared<BlockingPool>(BlockingPoolOptions{2, 8, std::chrono::seconds(5)});
    lifetime_ = std::make_shared<IoLifetime>();
    asio::local::connect_pair(a_, b_);
    loop_ = std::thread([this] {
      auto work = asio::make_work_guard(io_);
      io_.run();
    });
  }
  void TearDown() override {
    io_.stop();
    loop_.join();
    lifetime_->end();
    pool_->stop();
  }

  // `batches` batches of `per` records of ~`size` bytes; returns the values.
  std::vector<Bytes> append(int batches, int per, size_t size) {
    std::vector<Bytes> all;
    for (int b = 0; b < batches; ++b) {
      std::vector<Bytes> vals;
      for (int i = 0; i < per; ++i) {
        vals.push_back(Bytes(size, char('a' + (next_ % 26))) + std::to_string(next_));
        ++next_;
      }
      std::vector<BytesView> views(vals.begin(), vals.end());
      auto r = log_->append(views);
      EXPECT_TRUE(r.ok()) << r.error().message;
      all.insert(all.end(), vals.begin(), vals.end());
    }
    return all;
  }

  std::shared_ptr<Delivery> start(const log::OffsetSpec& spec, DeliveryOptions o, uint16_t credit,
                                  std::shared_ptr<DeliveryLimit> limit = nullptr) {
    // The handle a node would give: the log alone, not tiered.
    auto stream = std::make_shared<node::StreamHandle>("s", node::EffectiveSettings{}, log_,
                                                       nullptr, tier::TierContext{});
    auto r = stream->open_reader(spec);
    EXPECT_TRUE(r.ok()) << r.error().message;
    std::shared_ptr<Delivery> d;
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    asio::post(strand_, [&] {
      d = Delivery::start(
          std::move(*r), stream, std::make_shared<SocketSink>(a_), strand_,
          TaskContext{pool_.get(), lifetime_}, o, credit,
          [this](const Error& e) {
            std::lock_guard l(err_mu_);
            errors_.push_back(e.message);
          },
          limit);
      std::lock_guard l(mu);
      done = true;
      cv.notify_all();
    });
    std::unique_lock l(mu);
    cv.wait(l, [&] { return done; });
    return d;
  }

  // Runs f on the strand and waits for it.
  template <class F>
  void on_strand(F f) {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    asio::post(strand_, [&] {
      f();
      std::lock_guard l(mu);
      done = true;
      cv.notify_all();
    });
    std::unique_lock l(mu);
    cv.wait(l, [&] { return done; });
  }

  // The delivery's stats once it has read a chunk ahead (10 s at most).
  DeliveryStats await_read_ahead(Delivery& d) {
    DeliveryStats st;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    do {
      on_strand([&] { st = d.stats(); });
    } while (st.read_ahead == 0 && std::chrono::steady_clock::now() < deadline);
    return st;
  }

  // The deliveries' errors once there is one (10 s at most), taken.
  std::vector<std::string> take_errors() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
      {
        std::lock_guard l(err_mu_);
        if (!errors_.empty() || std::chrono::steady_clock::now() >= deadline) {
          return std::exchange(errors_, {});
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  // The stream's chunks as the log holds them (header, data).
  std::vector<std::pair<log::ChunkHeader, Bytes>> log_chunks() {
    std::vector<std::pair<log::ChunkHeader, Bytes>> out;
    auto r = log_->open_reader(log::OffsetSpec::first());
    EXPECT_TRUE(r.ok());
    while (true) {
      auto c = (*r)->next_chunk();
      EXPECT_TRUE(c.ok());
      if (!c.ok() || !*c) break;
      out.emplace_back((*c)->header, Bytes((*c)->data()));
    }
    return out;
  }

  test::TempDir dir_;
  FaultFileSystem ffs_;  // for a log whose files have no descriptor
  std::shared_ptr<log::StreamLog> log_;
  std::shared_ptr<BlockingPool> pool_;
  std::shared_ptr<IoLifetime> lifetime_;
  asio::io_context io_;
  Strand strand_{asio::make_strand(io_)};
  Socket a_{io_}, b_{io_};
  std::thread loop_;
  int next_ = 0;
  std::mutex err_mu_;
  std::vector<std::string> errors_;
};

TEST_F(DeliveryTest, WireChunksAreTheLogsChunksWithZlibCrc) {
  append(40, 25, 100);
  auto chunks = log_chunks();
  ASSERT_GT(chunks.size(), 1u);
  DeliveryOptions o;
  o.subscription_id = 7;
  auto d = start(log::OffsetSpec::first(), o, uint16_t(chunks.size()));
  for (const auto& [h, data] : chunks) {
    auto w = read_frame(b_.native_handle());
    ASSERT_TRUE(w);
    EXPECT_EQ(w->version, 1);
    EXPECT_EQ(w->subscription, 7);
    EXPECT_EQ(w->magic_version, 0x50);
    EXPECT_EQ(w->type, 0);
    EXPECT_EQ(w->chunk_id, h.first_offset);
    EXPECT_EQ(w->entries, h.num_entries);
    EXPECT_EQ(w->records, h.num_records);
    EXPECT_EQ(w->epoch, h.epoch);
    EXPECT_EQ(w->trailer_len, 0u);
    EXPECT_EQ(w->reserved, 0u);
    EXPECT_EQ(w->data, data);
    EXPECT_EQ(w->crc, uint32_t(::crc32(0, u8(w->data.data()), uInt(w->data.size()))));
  }
  on_strand([&] {
    EXPECT_EQ(d->credit(), 0u);
    d->stop();
  });
  std::lock_guard l(err_mu_);
  EXPECT_TRUE(errors_.empty());
}

// A stream written before chunk version 3 (the version 2 segments of
// tests/log/golden, data CRC in CRC32C) that then took version 3 chunks:
// every chunk goes out with the wire CRC the log stored, which is zlib's
// crc32 of its data, by both paths, and none is computed at delivery.
TEST_F(DeliveryTest, Version2AndVersion3ChunksGoOutWithTheirStoredWireCrc) {
  const std::string v2dir = dir_.sub("v2");
  ASSERT_TRUE(create_dirs(posix_fs(), v2dir).ok());
  for (const auto& [vector, name] :
       {std::pair{"log/golden/segment-0-v2.hex", log::segment_file_name(0)},
        std::pair{"log/golden/index-0.hex", log::index_file_name(0)},
        std::pair{"log/golden/segment-4-v2.hex", log::segment_file_name(4)},
        std::pair{"log/golden/index-4.hex", log::index_file_name(4)}}) {
    const auto v = test::golden::load(vector);
    ASSERT_TRUE(v.problems.empty()) << vector;
    ASSERT_TRUE(
        write_file_atomic(posix_fs(), v2dir + "/" + name, test::golden::pinned_bytes(v)).ok());
  }
  log::LogOptions lo;
  lo.fsync = log::FsyncPolicy::never;
  lo.epoch = 7;  // the golden segments' epoch
  auto l = log::StreamLog::open(v2dir, lo);
  ASSERT_TRUE(l.ok()) << l.error().message;
  log_ = *l;
  append(3, 5, 100);
  auto chunks = log_chunks();
  std::vector<int> versions;
  for (const auto& c : chunks) versions.push_back(c.first.version);
  ASSERT_EQ(versions, (std::vector<int>{2, 2, 2, 3, 3, 3}));
  for (int located = 0; located < 2; ++located) {
    DeliveryOptions o;
    o.locate = o.use_sendfile = located == 1;
    o.sendfile_min_bytes = 0;
    auto d = start(log::OffsetSpec::first(), o, uint16_t(chunks.size()));
    for (const auto& [h, data] : chunks) {
      auto w = read_frame(b_.native_handle());
      ASSERT_TRUE(w);
      EXPECT_EQ(w->chunk_id, h.first_offset);
      EXPECT_EQ(w->data, data);
      EXPECT_EQ(w->crc, h.wire_crc);
      EXPECT_EQ(w->crc, uint32_t(::crc32(0, u8(w->data.data()), uInt(w->data.size()))));
    }
    on_strand([&] {
      EXPECT_EQ(d->credit(), 0u);
      EXPECT_EQ(d->stats().crc_computed, 0u);
      d->stop();
    });
  }
  ASSERT_TRUE(log_->close().ok());
  std::lock_guard l2(err_mu_);
  EXPECT_TRUE(errors_.empty());
}

// Credit bounds the chunks sent; more credit sends more; a caught-up
// delivery sends what is committed later.
TEST_F(DeliveryTest, CreditAndWakeUp) {
  append(10, 5, 50);
  auto chunks = log_chunks();
  ASSERT_EQ(chunks.size(), 10u);
  DeliveryOptions o;
  o.version = 2;
  auto d = start(log::OffsetSpec::first(), o, 3);
  for (int i = 0; i < 3; ++i) {
    auto w = read_frame(b_.native_handle());
    ASSERT_TRUE(w);
    EXPECT_EQ(w->chunk_id, chunks[size_t(i)].first.first_offset);
    EXPECT_GE(w->committed, w->chunk_id);
  }
  // No fourth frame without credit: no frame in flight (one chunk may be
  // read ahead) and the socket holds nothing.
  on_strand([&] { EXPECT_EQ(d->credit(), 0u); });
  char probe;
  EXPECT_EQ(::recv(b_.native_handle(), &probe, 1, MSG_DONTWAIT), -1);
  on_strand([&] { d->add_credit(100); });
  for (size_t i = 3; i < chunks.size(); ++i) {
    auto w = read_frame(b_.native_handle());
    ASSERT_TRUE(w);
    EXPECT_EQ(w->chunk_id, chunks[i].first.first_offset);
  }
  // Caught up: commits now wake it.
  append(3, 2, 10);
  auto later = log_chunks();
  ASSERT_EQ(later.size(), 13u);
  for (size_t i = 10; i < 13; ++i) {
    auto w = read_frame(b_.native_handle());
    ASSERT_TRUE(w);
    EXPECT_EQ(w->chunk_id, later[i].first.first_offset);
    EXPECT_EQ(w->data, later[i].second);
    EXPECT_GE(w->committed, w->chunk_id);
  }
  on_strand([&] {
    EXPECT_GE(d->stats().wakeups, 1u);
    // Credit is taken when a chunk is read for sending: 3 + 100 - 13.
    EXPECT_EQ(d->credit(), 90u);
    d->stop();
  });
}

// A limit under the test's control: end() as set, waiters kept until it
// moves past their offset or fail() ends them.
class ManualLimit : public DeliveryLimit {
 public:
  uint64_t end() const override {
    std::lock_guard l(mu_);
    return end_;
  }
  void await_beyond(uint64_t offset, std::function<void(Status)> done) override {
    {
      std::lock_guard l(mu_);
      asked_.push_back(offset);
      if (end_ <= offset) {
        waiters_.emplace_back(offset, std::move(done));
        return;
      }
    }
    done(Status::OK());
  }
  void set(uint64_t end) {
    std::vector<std::function<void(Status)>> ready;
    {
      std::lock_guard l(mu_);
      end_ = end;
      for (auto it = waiters_.begin(); it != waiters_.end();) {
        if (end_ > it->first) {
          ready.push_back(std::move(it->second));
          it = waiters_.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (auto& f : ready) f(Status::OK());
  }
  void fail(const Error& e) {
    std::vector<std::pair<uint64_t, std::function<void(Status)>>> w;
    {
      std::lock_guard l(mu_);
      w.swap(waiters_);
    }
    for (auto& [o, f] : w) f(e);
  }
  std::vector<uint64_t> asked() const {
    std::lock_guard l(mu_);
    return asked_;
  }

 private:
  mutable std::mutex mu_;
  uint64_t end_ = 0;
  std::vector<std::pair<uint64_t, std::function<void(Status)>>> waiters_;
  std::vector<uint64_t> asked_;
};

// Whether a byte arrives on `fd` within `ms`.
bool readable_within(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, ms) == 1;
}

// The located path (every local chunk by sendfile) or the in-memory one.
DeliveryOptions path_options(int located) {
  DeliveryOptions o;
  o.locate = o.use_sendfile = located == 1;
  o.sendfile_min_bytes = 0;
  return o;
}

// A limit (confirm = remote: the persisted end) holds back the chunks at
// and above it, whatever the credit and the log hold, on both paths; the
// delivery goes on when it moves, and ends with the wait's error.
TEST_F(DeliveryTest, ALimitHoldsBackChunksUntilItMoves) {
  append(10, 5, 50);
  auto chunks = log_chunks();
  ASSERT_EQ(chunks.size(), 10u);
  for (int located = 0; located < 2; ++located) {
    SCOPED_TRACE(located ? "located" : "memory");
    auto limit = std::make_shared<ManualLimit>();
    limit->set(chunks[4].first.first_offset);
    auto d = start(log::OffsetSpec::first(), path_options(located), 100, limit);
    for (size_t i = 0; i < 4; ++i) {
      auto w = read_frame(b_.native_handle());
      ASSERT_TRUE(w);
      EXPECT_EQ(w->chunk_id, chunks[i].first.first_offset);
    }
    EXPECT_FALSE(readable_within(b_.native_handle(), 300)) << "a chunk above the limit was sent";
    ASSERT_FALSE(limit->asked().empty());
    EXPECT_EQ(limit->asked().back(), chunks[4].first.first_offset);
    // A limit inside the next chunk's range never happens (limits are chunk
    // boundaries); moving it past two chunks releases exactly those.
    limit->set(chunks[6].first.first_offset);
    for (size_t i = 4; i < 6; ++i) {
      auto w = read_frame(b_.native_handle());
      ASSERT_TRUE(w);
      EXPECT_EQ(w->chunk_id, chunks[i].first.first_offset);
      EXPECT_EQ(w->data, chunks[i].second);
    }
    EXPECT_FALSE(readable_within(b_.native_handle(), 300));
    on_strand([&] {
      EXPECT_GE(d->stats().limit_waits, 2u);
      EXPECT_EQ(d->credit(), 94u);
    });
    limit->fail(Error(Errc::closed, "uploader closed"));
    auto errors = take_errors();
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_NE(errors[0].find("persisted end"), std::string::npos) << errors[0];
    EXPECT_NE(errors[0].find("uploader closed"), std::string::npos) << errors[0];
    on_strand([&] { EXPECT_TRUE(d->stopped()); });
    EXPECT_FALSE(readable_within(b_.native_handle(), 100));
  }
}

// In a cluster with confirm = local the node's lease is the limit
// (lease_limit): while it holds every chunk goes out; once it has ended
// nothing more does — not even the chunk read ahead before it ended — and
// the delivery ends saying why.
TEST_F(DeliveryTest, NothingIsDeliveredOnceTheNodesLeaseHasEnded) {
  append(5, 5, 50);
  auto chunks = log_chunks();
  ASSERT_EQ(chunks.size(), 5u);
  auto until = std::make_shared<std::atomic<int64_t>>(std::numeric_limits<int64_t>::max());
  auto leased = std::make_shared<node::StreamHandle>("s", node::EffectiveSettings{}, log_, nullptr,
                                                     tier::TierContext{}, nullptr, until);
  auto d = start(log::OffsetSpec::first(), DeliveryOptions{}, 1, lease_limit(leased));
  auto w = read_frame(b_.native_handle());
  ASSERT_TRUE(w);
  EXPECT_EQ(w->chunk_id, chunks[0].first.first_offset);
  ASSERT_EQ(await_read_ahead(*d).read_ahead, 1u);
  // The lease ends with chunk 1 read and queued; credit comes after.
  until->store(0);
  on_strand([&] { d->add_credit(4); });
  EXPECT_FALSE(readable_within(b_.native_handle(), 300)) << "a chunk went out after the lease";
  auto errors = take_errors();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("lease has ended"), std::string::npos) << errors[0];
  on_strand([&] { EXPECT_TRUE(d->stopped()); });
}

// A subscription starting at the limit (`next` on a stream whose tail is
// not persisted) sends nothing until the limit passes its offset.
TEST_F(DeliveryTest, ASubscriptionAtTheLimitWaitsForIt) {
  append(3, 5, 50);
  auto chunks = log_chunks();
  auto limit = std::make_shared<ManualLimit>();
  limit->set(chunks[1].first.first_offset);
  auto d = start(log::OffsetSpec::next(), DeliveryOptions{}, 10, limit);
  append(1, 5, 50);
  EXPECT_FALSE(readable_within(b_.native_handle(), 300));
  limit->set(log_->committed_next());
  auto w = read_frame(b_.native_handle());
  ASSERT_TRUE(w);
  EXPECT_EQ(w->chunk_id, 15u);
  on_strand([&] { d->stop(); });
}

// With the credit used up, one chunk is read ahead: it is not sent (the
// credit rules), and goes out as soon as one credit arrives. Never more
// frames than credits reach the socket.
TEST_F(DeliveryTest, OneChunkIsReadAheadWhenTheCreditIsUsedUp) {
  append(5, 5, 50);
  auto chunks = log_chunks();
  ASSERT_EQ(chunks.size(), 5u);
  for (int located = 0; located < 2; ++located) {
    SCOPED_TRACE(located ? "located" : "memory");
    auto d = start(log::OffsetSpec::first(), path_options(located), 1);
    auto w = read_frame(b_.native_handle());
    ASSERT_TRUE(w);
    EXPECT_EQ(w->chunk_id, chunks[0].first.first_offset);
    EXPECT_EQ(await_read_ahead(*d).read_ahead, 1u);
    EXPECT_FALSE(readable_within(b_.native_handle(), 200)) << "a chunk went out without credit";
    for (size_t i = 1; i < chunks.size(); ++i) {
      on_strand([&] { d->add_credit(1); });
      w = read_frame(b_.native_handle());
      ASSERT_TRUE(w);
      EXPECT_EQ(w->chunk_id, chunks[i].first.first_offset);
      EXPECT_EQ(w->data, chunks[i].second);
      EXPECT_FALSE(readable_within(b_.native_handle(), 50)) << "more frames than credits";
    }
    on_strand([&] {
      EXPECT_EQ(d->credit(), 0u);
      d->stop();
    });
  }
}

// From an offset inside a chunk: the whole chunk is delivered (the client
// skips the records before its offset), as RabbitMQ does.
TEST_F(DeliveryTest, OffsetInsideAChunkDeliversTheWholeChunk) {
  append(4, 10, 20);
  auto chunks = log_chunks();
  auto d = start(log::OffsetSpec::at_offset(15), DeliveryOptions{}, 10);
  auto w = read_frame(b_.native_handle());
  ASSERT_TRUE(w);
  EXPECT_EQ(w->chunk_id, 10u);
  EXPECT_EQ(w->records, 10u);
  EXPECT_EQ(w->data, chunks[1].second);
  on_strand([&] { d->stop(); });
}

// The located path (sendfile when the wire CRC is stored), the located
// path without sendfile (TLS: each body read straight into its frame) and
// the in-memory path (the reader reads and checks each chunk whole) put the
// same bytes on the wire.
TEST_F(DeliveryTest, LocatedAndMemoryPathsSendIdenticalBytes) {
  append(30, 40, 200);
  auto chunks = log_chunks();
  std::vector<Bytes> runs[3];
  for (int path = 0; path < 3; ++path) {
    DeliveryOptions o;
    o.locate = path != 0;
    o.use_sendfile = path == 1;
    o.sendfile_min_bytes = 0;  // every located chunk by sendfile
    o.version = 2;
    auto d = start(log::OffsetSpec::first(), o, uint16_t(chunks.size()));
    for (size_t i = 0; i < chunks.size(); ++i) {
      auto w = read_frame(b_.native_handle());
      ASSERT_TRUE(w);
      runs[path].push_back(w->raw);
    }
    on_strand([&] {
      EXPECT_EQ(d->credit(), 0u);
      // The log stores each chunk's wire CRC: nothing is checksummed at
      // delivery, and the sendfile path sends every body from the file.
      EXPECT_EQ(d->stats().crc_computed, 0u);
      EXPECT_EQ(d->stats().sendfile_chunks, path == 1 ? chunks.size() : 0u);
      EXPECT_EQ(d->stats().memory_chunks, path == 1 ? 0u : chunks.size());
      d->stop();
    });
  }
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_EQ(runs[0], runs[2]);
}

// Chunks below sendfile_min_bytes are read into memory and several share
// one write; larger ones go by sendfile. The bytes on the wire are the same
// as the all-in-memory path's, and credit counts chunks, not writes.
TEST_F(DeliveryTest, SmallChunksShareWritesLargeOnesGoBySendfile) {
  append(6, 10, 50);    // ~0.6 KiB chunks
  append(4, 10, 1500);  // ~15 KiB chunks
  append(6, 10, 50);
  auto chunks = log_chunks();
  ASSERT_EQ(chunks.size(), 16u);
  std::vector<Bytes> runs[2];
  DeliveryStats st[2];
  for (int located = 0; located < 2; ++located) {
    DeliveryOptions o;
    o.locate = o.use_sendfile = located == 1;
    o.sendfile_min_bytes = 8 << 10;
    auto d = start(log::OffsetSpec::first(), o, uint16_t(chunks.size() + 4));
    for (size_t i = 0; i < chunks.size(); ++i) {
      auto w = read_frame(b_.native_handle());
      ASSERT_TRUE(w);
      EXPECT_EQ(w->chunk_id, chunks[i].first.first_offset);
      EXPECT_EQ(w->data, chunks[i].second);
      runs[located].push_back(w->raw);
    }
    // Written-frame counts move when the write's completion reaches the
    // strand, which may be after the bytes reached the socket: wait for it.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    do {
      on_strand([&] { st[located] = d->stats(); });
    } while (st[located].chunks < chunks.size() && std::chrono::steady_clock::now() < deadline);
    on_strand([&] {
      EXPECT_EQ(d->credit(), 4u);
      d->stop();
    });
  }
  EXPECT_EQ(runs[0], runs[1]);
  for (const auto& s : st) {
    EXPECT_EQ(s.chunks, chunks.size());
    EXPECT_EQ(s.sendfile_chunks + s.memory_chunks, chunks.size());
    EXPECT_LT(s.writes, chunks.size()) << "small chunks were written one by one";
    EXPECT_EQ(s.crc_computed, 0u);
  }
  EXPECT_EQ(st[0].sendfile_chunks, 0u);
  EXPECT_EQ(st[1].sendfile_chunks, 4u);
  EXPECT_EQ(st[1].memory_chunks, 12u);
}

// coalesce_bytes: consecutive small chunks go out as one chunk — the first's
// id and epoch, the entries back to back, the counts added, zlib's CRC of
// the joined data — never past the byte bound, never joining a chunk that
// goes by sendfile; credit counts the Delivers. The same bytes by both
// paths, and with a credit of one per Deliver (the carried chunk).
TEST_F(DeliveryTest, ConsecutiveSmallChunksGoOutAsOneChunk) {
  append(6, 10, 50);    // ~0.6 KiB chunks
  append(2, 10, 1500);  // ~15 KiB chunks: by sendfile on the located path
  append(5, 10, 50);
  auto chunks = log_chunks();
  ASSERT_EQ(chunks.size(), 13u);
  uint64_t small_max = 0;
  uint64_t small_min = UINT64_MAX;
  for (const auto& [h, data] : chunks) {
    if (h.data_len > 8192) continue;
    small_max = std::max<uint64_t>(small_max, h.data_len);
    small_min = std::min<uint64_t>(small_min, h.data_len);
  }
  // Two small chunks always fit, three never do.
  const uint64_t limit = 2 * small_max;
  ASSERT_GT(3 * small_min, limit);
  // Chunk indexes of each expected Deliver.
  const std::vector<std::vector<size_t>> groups = {{0, 1}, {2, 3}, {4, 5},   {6},
                                                   {7},    {8, 9}, {10, 11}, {12}};
  std::vector<Bytes> runs[3];
  for (int run = 0; run < 3; ++run) {
    DeliveryOptions o;
    o.locate = o.use_sendfile = run != 0;
    o.sendfile_min_bytes = 8 << 10;
    o.coalesce_bytes = limit;
    // Run 2 grants one credit per Deliver read, so every read job but the
    // first starts with the chunk the one before read and did not join.
    auto d = start(log::OffsetSpec::first(), o, uint16_t(run == 2 ? 1 : groups.size()));
    for (size_t g = 0; g < groups.size(); ++g) {
      auto w = read_frame(b_.native_handle());
      ASSERT_TRUE(w) << "Deliver " << g;
      const auto& first = chunks[groups[g].front()].first;
      Bytes data;
      uint32_t entries = 0;
      uint32_t records = 0;
      for (size_t i : groups[g]) {
        data += chunks[i].second;
        entries += chunks[i].first.num_entries;
        records += chunks[i].first.num_records;
      }
      EXPECT_EQ(w->chunk_id, first.first_offset) << "Deliver " << g;
      EXPECT_EQ(w->epoch, first.epoch);
      EXPECT_EQ(w->entries, entries) << "Deliver " << g;
      EXPECT_EQ(w->records, records) << "Deliver " << g;
      EXPECT_EQ(w->data, data) << "Deliver " << g;
      EXPECT_EQ(w->crc, uint32_t(::crc32(0, u8(w->data.data()), uInt(w->data.size()))));
      runs[run].push_back(w->raw);
      if (run == 2 && g + 1 < groups.size()) on_strand([&] { d->add_credit(1); });
    }
    DeliveryStats st;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    do {
      on_strand([&] { st = d->stats(); });
    } while (st.chunks < groups.size() && std::chrono::steady_clock::now() < deadline);
    on_strand([&] {
      EXPECT_EQ(d->credit(), 0u);
      d->stop();
    });
    EXPECT_EQ(st.chunks, groups.size());
    EXPECT_EQ(st.coalesced_chunks, chunks.size() - groups.size());
    EXPECT_EQ(st.crc_computed, 0u);
  }
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_EQ(runs[1], runs[2]);
  std::lock_guard l(err_mu_);
  EXPECT_TRUE(errors_.empty());
}

// Chunks holding a sub-batch are never joined, even one of a single record
// (as many records as entries: only its entries tell): the JavaScript
// client reads a chunk's entries as all of the first one's kind. With a
// credit of one per Deliver the chunk found not to join is carried.
TEST_F(DeliveryTest, ChunksWithSubBatchesAreNotJoined) {
  auto entries = [&](const Bytes& data, uint16_t n, uint32_t recs) {
    log::EntryBatch b;
    b.entries = data;
    b.num_entries = n;
    b.num_records = recs;
    ASSERT_TRUE(log_->append_entries(b).ok());
  };
  using log::test::simple_entry;
  using log::test::sub_batch;
  entries(simple_entry("a") + simple_entry("b"), 2, 2);         // 0
  entries(simple_entry("c"), 1, 1);                             // 1: joins 0
  entries(sub_batch(0, {"d"}), 1, 1);                           // 2: one record
  entries(simple_entry("e"), 1, 1);                             // 3
  entries(sub_batch(0, {"f", "g"}) + simple_entry("h"), 2, 3);  // 4
  entries(simple_entry("i"), 1, 1);                             // 5
  entries(simple_entry("j"), 1, 1);                             // 6: joins 5
  auto chunks = log_chunks();
  ASSERT_EQ(chunks.size(), 7u);
  const std::vector<std::vector<size_t>> groups = {{0, 1}, {2}, {3}, {4}, {5, 6}};
  for (int one_credit = 0; one_credit < 2; ++one_credit) {
    DeliveryOptions o;
    o.coalesce_bytes = 1 << 20;
    auto d = start(log::OffsetSpec::first(), o, uint16_t(one_credit ? 1 : groups.size()));
    for (size_t g = 0; g < groups.size(); ++g) {
      auto w = read_frame(b_.native_handle());
      ASSERT_TRUE(w) << "Deliver " << g;
      Bytes data;
      for (size_t i : groups[g]) data += chunks[i].second;
      EXPECT_EQ(w->chunk_id, chunks[groups[g].front()].first.first_offset) << "Deliver " << g;
      EXPECT_EQ(w->data, data) << "Deliver " << g;
      EXPECT_EQ(w->crc, uint32_t(::crc32(0, u8(w->data.data()), uInt(w->data.size()))));
      if (one_credit && g + 1 < groups.size()) on_strand([&] { d->add_credit(1); });
    }
    on_strand([&] { d->stop(); });
  }
  std::lock_guard l(err_mu_);
  EXPECT_TRUE(errors_.empty());
}

// Chunks of two epochs (the log reopened by a new writer) are not joined:
// a wire chunk has one epoch.
TEST_F(DeliveryTest, ChunksOfDifferentEpochsAreNotJoined) {
  append(2, 5, 40);
  ASSERT_TRUE(log_->close().ok());
  log::LogOptions lo;
  lo.fsync = log::FsyncPolicy::never;
  lo.max_segment_bytes = 64 << 10;
  lo.epoch = 2;
  auto l = log::StreamLog::open(dir_.sub("s"), lo);
  ASSERT_TRUE(l.ok()) << l.error().message;
  log_ = *l;
  append(2, 5, 40);
  auto chunks = log_chunks();
  ASSERT_EQ(chunks.size(), 4u);
  ASSERT_NE(chunks[1].first.epoch, chunks[2].first.epoch);
  DeliveryOptions o;
  o.coalesce_bytes = 1 << 20;
  auto d = start(log::OffsetSpec::first(), o, 4);
  for (size_t g = 0; g < 2; ++g) {
    auto w = read_frame(b_.native_handle());
    ASSERT_TRUE(w);
    EXPECT_EQ(w->chunk_id, chunks[2 * g].first.first_offset);
    EXPECT_EQ(w->epoch, chunks[2 * g].first.epoch);
    EXPECT_EQ(w->data, chunks[2 * g].second + chunks[2 * g + 1].second);
    EXPECT_EQ(w->crc, uint32_t(::crc32(0, u8(w->data.data()), uInt(w->data.size()))));
  }
  on_strand([&] {
    EXPECT_EQ(d->credit(), 2u);
    d->stop();
  });
}

// Files without a descriptor (here the in-memory FaultFileSystem): the
// located path falls back to reading the body into the frame.
TEST_F(DeliveryTest, NoDescriptorFallsBackToMemory) {
  log::LogOptions lo;
  lo.fs = &ffs_;
  lo.create_if_missing = true;
  auto l = log::StreamLog::open("/mem", lo);
  ASSERT_TRUE(l.ok()) << l.error().message;
  log_ = *l;
  append(5, 10, 30);
  auto chunks = log_chunks();
  ASSERT_EQ(chunks.size(), 5u);
  auto d = start(log::OffsetSpec::first(), DeliveryOptions{}, 5);
  for (const auto& [h, data] : chunks) {
    auto w = read_frame(b_.native_handle());
    ASSERT_TRUE(w);
    EXPECT_EQ(w->chunk_id, h.first_offset);
    EXPECT_EQ(w->data, data);
    EXPECT_EQ(w->crc, uint32_t(::crc32(0, u8(w->data.data()), uInt(w->data.size()))));
  }
  on_strand([&] {
    EXPECT_EQ(d->stats().sendfile_chunks, 0u);
    EXPECT_EQ(d->stats().memory_chunks, 5u);
    d->stop();
    EXPECT_TRUE(log_->close().ok());
  });
}

// The join policy both delivery paths (local and replica) apply, on its own:
// a chunk's entries decide only when it joins or is small enough to take
// joins; a chunk at or over the limit takes none, whatever it holds.
TEST(JoinRole, SimpleSmallChunksTakeJoinsSubBatchesAndLargeOnesDoNot) {
  using log::test::simple_entry;
  using log::test::sub_batch;
  auto header = [](const Bytes& data, uint16_t entries, uint32_t records) {
    log::ChunkHeader h;
    h.num_entries = entries;
    h.num_records = records;
    h.data_len = uint32_t(data.size());
    return h;
  };
  const Bytes simple = simple_entry("a") + simple_entry("b");
  const Bytes one_sub = sub_batch(0, {"c"});
  const log::ChunkHeader hs = header(simple, 2, 2), hb = header(one_sub, 1, 1);
  const uint64_t big = simple.size() + 1, small = simple.size();

  JoinRole r = join_role(hs, simple, false, big);
  EXPECT_TRUE(r.simple);
  EXPECT_TRUE(r.takes_joins);
  // At the limit: not looked at, takes nothing; joining, it is looked at.
  r = join_role(hs, simple, false, small);
  EXPECT_FALSE(r.simple);
  EXPECT_FALSE(r.takes_joins);
  r = join_role(hs, simple, true, small);
  EXPECT_TRUE(r.simple);
  EXPECT_FALSE(r.takes_joins);
  // A sub-batch of one record (as many records as entries) neither joins
  // nor takes joins.
  r = join_role(hb, one_sub, true, 1 << 20);
  EXPECT_FALSE(r.simple);
  EXPECT_FALSE(r.takes_joins);
  r = join_role(hb, one_sub, false, 1 << 20);
  EXPECT_FALSE(r.takes_joins);
}

}  // namespace
}  // namespace strata::server
