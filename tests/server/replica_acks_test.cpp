// Replicated confirms over a real log (not tiered: nothing is persisted, so
// the copies alone count). ReplicaAcks (server/replica_acks.h): where a
// replicated confirm stands — the needed-th furthest copy, capped by the
// owner's own log, never below what is persisted — and the waits it
// answers as acks arrive. StreamAppender with AppenderOptions::replicas
// (server/stream_appender.h): a batch is confirmed once the copies
// acknowledge it, and never once this node's cluster lease has ended,
// however late the acknowledgements come (a frozen-then-resumed owner still
// feeds its copies what it wrote before the freeze; the others may
// meanwhile have elected a copy without it).
#include "server/replica_acks.h"

#include <gtest/gtest.h>

#include <asio/io_context.hpp>
#include <atomic>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

#include "common/blocking_pool.h"
#include "log/stream_log.h"
#include "proto/osiris_chunk.h"
#include "server/stream_appender.h"
#include "support/temp_dir.h"

namespace strata::server {
namespace {

class ReplicaAcksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log::LogOptions lo;
    lo.create_if_missing = true;
    lo.fsync = log::FsyncPolicy::never;
    auto l = log::StreamLog::open(dir_.sub("s"), lo);
    ASSERT_TRUE(l.ok()) << l.error().message;
    log_ = *l;
    node::EffectiveSettings es;
    es.confirm = node::ConfirmMode::replicated;
    stream_ = std::make_shared<node::StreamHandle>("s", es, log_, nullptr, tier::TierContext{},
                                                   nullptr, lease_until_);
  }
  // Appends `n` one-record chunks: the log then ends at committed_next().
  void append(int n) {
    for (int i = 0; i < n; ++i) {
      Bytes v = "m" + std::to_string(i);
      std::vector<BytesView> views{v};
      ASSERT_TRUE(log_->append(views).ok());
    }
  }
  test::TempDir dir_;
  std::shared_ptr<log::StreamLog> log_;
  // This node's lease (ms on the ownership's clock): valid until changed.
  std::shared_ptr<std::atomic<int64_t>> lease_until_ =
      std::make_shared<std::atomic<int64_t>>(std::numeric_limits<int64_t>::max());
  std::shared_ptr<node::StreamHandle> stream_;
};

TEST(CopiesNeeded, AMajorityOfTheStreamsNodesLessTheOwner) {
  EXPECT_EQ(copies_needed(0, 1), 0u);
  EXPECT_EQ(copies_needed(0, 2), 1u);
  EXPECT_EQ(copies_needed(0, 3), 1u);
  EXPECT_EQ(copies_needed(0, 4), 2u);
  EXPECT_EQ(copies_needed(0, 5), 2u);
  // initial-cluster-size raises it above the nodes registered...
  EXPECT_EQ(copies_needed(5, 3), 2u);
  // ... but never lowers it: every registered node may be elected, and an
  // election's majority must meet the confirm's (five nodes with a size of
  // three: a confirm held by two could be missed by the three that stand).
  EXPECT_EQ(copies_needed(1, 3), 1u);
  EXPECT_EQ(copies_needed(3, 5), 2u);
}

TEST_F(ReplicaAcksTest, NothingCountsBeforeTheOwnerKnowsWhomToCount) {
  append(10);
  ReplicaAcks acks(stream_);
  acks.ack("b", 10);
  EXPECT_EQ(acks.end(), 0u);
  acks.set_copies({"b", "c"}, 1);
  EXPECT_EQ(acks.end(), 10u);
}

TEST_F(ReplicaAcksTest, TheNeededThFurthestCopyCappedByTheOwnersLog) {
  append(10);
  ReplicaAcks acks(stream_);
  acks.set_copies({"b", "c", "d", "e"}, 2);
  EXPECT_EQ(acks.end(), 0u);
  acks.ack("b", 8);
  EXPECT_EQ(acks.end(), 0u) << "one copy of the two needed";
  acks.ack("c", 3);
  EXPECT_EQ(acks.end(), 3u);
  acks.ack("d", 6);
  EXPECT_EQ(acks.end(), 6u);
  // An older ack never moves it back.
  acks.ack("d", 2);
  EXPECT_EQ(acks.end(), 6u);
  // A copy past the owner's own log (it held more before a restart) counts
  // only to where the log ends.
  acks.ack("e", 40);
  acks.ack("c", 40);
  EXPECT_EQ(acks.end(), 10u);
  append(5);
  EXPECT_EQ(acks.end(), 15u);
  // A node leaves: the acks of the others still count.
  acks.set_copies({"b", "d"}, 1);
  EXPECT_EQ(acks.end(), 8u);
  // None needed (a one-node stream): the owner's log alone.
  acks.set_copies({}, 0);
  EXPECT_EQ(acks.end(), 15u);
  // More needed than registered: nothing more is confirmed.
  acks.set_copies({"b"}, 2);
  EXPECT_EQ(acks.end(), 0u);
}

// A resumed owner's copies acknowledge what it wrote before its freeze:
// too late, a copy elected meanwhile may lack it — consumers here must not
// read it (end() does not move), nor may it be confirmed.
TEST_F(ReplicaAcksTest, AcknowledgementsAfterTheLeaseEndedCountForNothing) {
  append(10);
  ReplicaAcks acks(stream_);
  acks.set_copies({"b", "c"}, 1);
  acks.ack("b", 4);
  EXPECT_EQ(acks.end(), 4u);
  bool answered = false;
  acks.await_beyond(6, [&](Status) { answered = true; });
  lease_until_->store(0);
  acks.ack("b", 10);
  acks.ack("c", 10);
  EXPECT_EQ(acks.end(), 4u);
  EXPECT_FALSE(answered);
}

TEST_F(ReplicaAcksTest, WaitsAreAnsweredInOrderAsCopiesCatchUpAndFailWhenTheStreamGoes) {
  append(10);
  ReplicaAcks acks(stream_);
  acks.set_copies({"b", "c"}, 1);
  std::vector<uint64_t> answered;
  std::vector<std::string> failed;
  for (uint64_t o : {2u, 5u, 8u}) {
    acks.await_beyond(o, [&, o](Status s) {
      if (s.ok()) {
        answered.push_back(o);
      } else {
        failed.push_back(s.error().message);
      }
    });
  }
  EXPECT_TRUE(answered.empty());
  acks.ack("c", 6);
  EXPECT_EQ(answered, (std::vector<uint64_t>{2, 5}));
  acks.fail_all(Error(Errc::unavailable, "the stream is no longer served here"));
  EXPECT_EQ(answered.size(), 2u);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_NE(failed[0].find("no longer served"), std::string::npos);
  // Once failed, a new wait fails at once.
  bool later_failed = false;
  acks.await_beyond(1, [&](Status s) { later_failed = !s.ok(); });
  EXPECT_TRUE(later_failed);
}

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

class ReplicatedConfirmTest : public ReplicaAcksTest {
 protected:
  void SetUp() override {
    ReplicaAcksTest::SetUp();
    acks_ = std::make_shared<ReplicaAcks>(stream_);
    acks_->set_copies({"b", "c"}, 1);
    pool_ = std::make_shared<BlockingPool>(BlockingPoolOptions{2, 8, std::chrono::seconds(5)});
    lifetime_ = std::make_shared<IoLifetime>();
    loop_ = std::thread([this] {
      auto work = asio::make_work_guard(io_);
      io_.run();
    });
    AppenderOptions o;
    // A batch the copies never acknowledge is answered after this.
    o.remote_timeout_ms = 1000;
    o.replicas = acks_;
    appender_ =
        std::make_shared<StreamAppender>(stream_, io_, TaskContext{pool_.get(), lifetime_}, o);
  }
  void TearDown() override {
    appender_->stop(proto::ResponseCode::stream_not_available);
    // As ServedStream::retire does: the appender's waits on the acks hold
    // the appender (which holds the acks) until answered.
    acks_->fail_all(Error(Errc::unavailable, "the stream is no longer served here"));
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
  // acknowledgements of what it wrote before come in now. They count for
  // nothing (ReplicaAcks::ack), and were one to release the batch the
  // appender would refuse it (release_remote): it is answered 6 when its
  // wait runs out, never confirmed.
  lease_until_->store(0);
  acks_->ack("b", 3);
  auto a = sink_->await(5s);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->code, proto::ResponseCode::stream_not_available);
  EXPECT_EQ(a->ids, (std::vector<uint64_t>{1, 2, 3}));
}

}  // namespace
}  // namespace strata::server
