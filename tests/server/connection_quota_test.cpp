#include "server/connection_quota.h"

#include <gtest/gtest.h>

namespace strata::server {
namespace {

using Outcome = ConnectionQuota::Outcome;

TEST(ConnectionQuota, PerUserAndPerVhostPlaces) {
  ConnectionQuota q(2, 3);
  EXPECT_EQ(q.take(1, "alice", "/"), Outcome::taken);
  EXPECT_EQ(q.take(2, "alice", "/"), Outcome::taken);
  EXPECT_EQ(q.take(3, "alice", "/"), Outcome::user_full);
  EXPECT_EQ(q.take(4, "bob", "/"), Outcome::taken);
  // The vhost is full: checked before the user's limit, as RabbitMQ does.
  EXPECT_EQ(q.take(5, "bob", "/"), Outcome::vhost_full);
  EXPECT_EQ(q.take(6, "bob", "other"), Outcome::taken);
  EXPECT_EQ(q.of_user("alice"), 2u);
  EXPECT_EQ(q.of_vhost("/"), 3u);
  // A refused connection took nothing; releasing it changes nothing.
  q.release(3);
  EXPECT_EQ(q.of_user("alice"), 2u);
  q.release(1);
  q.release(1);  // once only
  EXPECT_EQ(q.of_user("alice"), 1u);
  EXPECT_EQ(q.of_vhost("/"), 2u);
  EXPECT_EQ(q.take(7, "alice", "/"), Outcome::taken);
  // Taking twice with one id holds one place.
  EXPECT_EQ(q.take(7, "alice", "/"), Outcome::taken);
  EXPECT_EQ(q.of_user("alice"), 2u);
}

TEST(ConnectionQuota, ZeroIsNoLimit) {
  ConnectionQuota q(0, 0);
  for (uint64_t i = 0; i < 1000; ++i) EXPECT_EQ(q.take(i, "u", "/"), Outcome::taken);
  EXPECT_EQ(q.of_vhost("/"), 1000u);
}

}  // namespace
}  // namespace strata::server
