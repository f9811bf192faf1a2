// A replicated confirm (server/stream_appender.h with AppenderOptions::
// replicas, server/replica_acks.h) over a real log: a batch is confirmed
// once the copies acknowledge it — and never once this node's cluster
// lease has ended, however late the copies' acknowledgements come (a
// frozen-then-resumed owner still feeds its copies what it wrote before the
// freeze; the others may meanwhile have elected a copy without it).
#include <gtest/gtest.h>

#include <asio/io_context.hpp>
#include <atomic>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <thread>

#include "common/blocking_pool.h"
#include "common/clock.h"
#include "log/stream_log.h"
#include "proto/osiris_chunk.h"
#include "server/replica_acks.h"
#include "server/stream_appender.h"
#include "support/temp_dir.h"

namespace strata::server {
namespace {

using namespace std::chrono_literals;

struct Answer {
  std::vector<uint64_t> ids;
  proto::ResponseCode code;
};

class Sink : public PublishSink {
 public:
  void on_appended(uint8_t, std::vector<uint64_t> ids, proto::ResponseCode code,
                   uint64_t) override {
    std::lock_guard l(mu_);
    answers_.push_back({std::move(ids), code});
    cv_.notify_all();
  }
  std::optional<Answer> await(std::chrono::milliseconds timeout) {
    std::unique_lock l(mu_);
    if (!cv_.wait_for(l, timeout, [&] { return !answers_.empty(); })) return std::nullopt;
    Answer a = answers_.front();
    answers_.erase(answers_.begin());
    return a;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Answer> answers_;
};

class ReplicatedConfirmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log::LogOptions lo;
    lo.create_if_missing = true;
    lo.fsync = log::FsyncPolicy::never;
    auto l = log::StreamLog::open(dir_.sub("s"), lo);
    ASSERT_TRUE(l.ok()) << l.error().message;
    node::EffectiveSettings es;
    es.confirm = node::ConfirmMode::replicated;
    stream_ = std::make_shared<node::StreamHandle>("s", es, *l, nullptr, tier::TierContext{},
                                                   nullptr, lease_until_);
    acks_ = std::make_shared<ReplicaAcks>(stream_);
    acks_->set_copies({"b", "c"}, 1);
    pool_ = std::make_shared<BlockingPool>(BlockingPoolOptions{2, 8, std::chrono::seconds(5)});
    lifetime_ = std::make_shared<IoLifetime>();
    loop_ = std::thread([this] {
      auto work = asio::make_work_guard(io_);
      io_.run();
    });
    AppenderOptions o;
    o.remote_timeout_ms = 5000;
    o.replicas = acks_;
    appender_ =
        std::make_shared<StreamAppender>(stream_, io_, TaskContext{pool_.get(), lifetime_}, o);
  }
  void TearDown() override {
    appender_->stop(proto::ResponseCode::stream_not_available);
    io_.stop();
    loop_.join();
    lifetime_->end();
    pool_->stop();
  }
  // Publishes ids [first, first + n) and waits until they are in the log.
  void publish(uint64_t first, int n) {
    const uint64_t before = stream_->committed_next();
    bodies_.clear();
    std::vector<proto::PublishedMessage> msgs;
    for (int i = 0; i < n; ++i) {
      Bytes e;
      proto::append_simple_entry(&e, "m" + std::to_string(first + i));
      bodies_.push_back(std::move(e));
    }
    for (int i = 0; i < n; ++i) msgs.push_back({first + i, std::nullopt, bodies_[i]});
    appender_->submit(sink_, 1, "p", msgs, 0);
    for (int i = 0; i < 500 && stream_->committed_next() < before + n; ++i) {
      std::this_thread::sleep_for(5ms);
    }
    ASSERT_EQ(stream_->committed_next(), before + n);
  }

  test::TempDir dir_;
  std::shared_ptr<std::atomic<int64_t>> lease_until_ =
      std::make_shared<std::atomic<int64_t>>(std::numeric_limits<int64_t>::max());
  std::shared_ptr<node::StreamHandle> stream_;
  std::shared_ptr<ReplicaAcks> acks_;
  std::shared_ptr<BlockingPool> pool_;
  std::shared_ptr<IoLifetime> lifetime_;
  asio::io_context io_;
  std::thread loop_;
  std::shared_ptr<StreamAppender> appender_;
  std::shared_ptr<Sink> sink_ = std::make_shared<Sink>();
  std::vector<Bytes> bodies_;
};

TEST_F(ReplicatedConfirmTest, ABatchIsConfirmedOnceACopyHoldsIt) {
  publish(1, 3);
  EXPECT_FALSE(sink_->await(200ms)) << "confirmed before any copy held it";
  acks_->ack("c", 3);
  auto a = sink_->await(5s);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->code, proto::ResponseCode::ok);
  EXPECT_EQ(a->ids, (std::vector<uint64_t>{1, 2, 3}));
}

TEST_F(ReplicatedConfirmTest, NothingIsConfirmedOnceTheLeaseHasEndedEvenIfTheCopiesHoldIt) {
  publish(1, 3);
  EXPECT_FALSE(sink_->await(200ms));
  // The node is frozen past its lease, then resumes: the copies'
  // acknowledgements of what it wrote before come in now.
  lease_until_->store(0);
  acks_->ack("b", 3);
  auto a = sink_->await(5s);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->code, proto::ResponseCode::stream_not_available);
  EXPECT_EQ(a->ids, (std::vector<uint64_t>{1, 2, 3}));
}

}  // namespace
}  // namespace strata::server
