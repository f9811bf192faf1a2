// Deleting a stream on a node with the directory object store: everything
// of the stream goes (bucket prefix, local directory, catalog entry, marker),
// nothing of its neighbours; the name can be used again and starts empty;
// a deletion found pending at open is finished in the background and the
// stream stays hidden meanwhile; unreadable markers block instead of
// deleting; readers and writers of a deleted stream get clean errors; a
// second process on the same data directory is refused.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "node/deletion_marker.h"
#include "node/node.h"
#include "node/node_test_util.h"
#include "support/assertions.h"
#include "support/temp_dir.h"

namespace strata::node {
namespace {

using strata::test::TempDir;
using namespace strata::node::test;

NodeConfig config_at(const std::string& dir, nlohmann::json doc = small_node_doc()) {
  auto cfg = load_node_config(doc, dir, objstore::process_env());
  EXPECT_TRUE(cfg.ok()) << cfg.error().to_string();
  return *cfg;
}

std::unique_ptr<Node> open_node(const std::string& dir) {
  auto n = Node::open(config_at(dir));
  EXPECT_TRUE(n.ok()) << n.error().to_string();
  return n.ok() ? std::move(n).value() : nullptr;
}

std::vector<std::string> remote_keys(Node& n, const std::string& stream) {
  auto keys = tier::ObjectKeys::make("t", stream);
  auto all = objstore::list_all(n.store(), keys->stream_prefix());
  EXPECT_TRUE(all.ok()) << all.error().to_string();
  std::vector<std::string> out;
  if (all.ok()) {
    for (const auto& o : *all) out.push_back(o.key);
  }
  return out;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Nothing of `stream` is left: no object under its prefix, no directory
// (nor a tombstone of it), no catalog entry, no marker, not listed.
void expect_gone(Node& n, const std::string& dir, const std::string& stream) {
  EXPECT_TRUE(remote_keys(n, stream).empty());
  EXPECT_FALSE(exists(posix_fs(), dir + "/streams/" + stream));
  auto names = posix_fs().list_dir(dir + "/streams");
  ASSERT_OK(names);
  for (const auto& nm : *names) EXPECT_FALSE(nm.starts_with(".deleting-")) << nm;
  EXPECT_EQ(n.catalog().get(stream).code(), Errc::not_found);
  EXPECT_FALSE(exists(posix_fs(), deletion_marker_path(dir + "/deletions", stream)));
  EXPECT_FALSE(contains(n.streams(), stream));
  EXPECT_FALSE(contains(n.pending_deletions(), stream));
  EXPECT_FALSE(n.status_json()["deletions"].contains(stream));
}

// Every record of `stream` below `next`, remote and local, as written.
void expect_intact(Node& n, const std::string& stream, uint64_t next) {
  auto view = read_remote(n.store(), n.catalog(), "t", stream);
  for (const auto& e : view.errors) ADD_FAILURE() << e;
  for (const auto& [off, val] : view.records) ASSERT_EQ(val, value_of(off)) << off;
  auto log = n.stream(stream);
  ASSERT_OK(log);
  EXPECT_EQ((*log)->committed_next(), next);
  auto r = (*log)->open_reader(log::OffsetSpec::first());
  ASSERT_OK(r);
  std::vector<log::Record> recs;
  uint64_t expect = (*log)->first_offset();
  for (;;) {
    recs.clear();
    auto got = (*r)->next_records(&recs);
    ASSERT_OK(got);
    if (*got == 0) break;
    for (const auto& rec : recs) {
      ASSERT_EQ(rec.offset, expect);
      ASSERT_EQ(std::string(rec.value), value_of(expect));
      expect += 1;
    }
  }
  EXPECT_EQ(expect, next);
}

TEST(NodeDelete, RemovesBothTiersAndTheCatalogEntryAndTheNameStartsOver) {
  TempDir tmp;
  const std::string dir = tmp.sub("node");
  uint64_t kept_next = 0;
  {
    auto n = open_node(dir);
    ASSERT_TRUE(n);
    auto s1 = n->create_stream("s1");
    auto s2 = n->create_stream("s2");
    ASSERT_OK(s1);
    ASSERT_OK(s2);
    append_values(**s1, 100);
    kept_next = append_values(**s2, 60);
    ASSERT_OK(n->flush("s1", std::chrono::seconds(30)));
    ASSERT_OK(n->flush("s2", std::chrono::seconds(30)));
    // More that stays local only: data in both tiers.
    append_values(**s1, 20);
    ASSERT_GE(remote_keys(*n, "s1").size(), 3u) << "fragments and a root";
    ASSERT_OK(n->catalog().get("s1"));

    ASSERT_OK(n->delete_stream("s1"));
    expect_gone(*n, dir, "s1");
    EXPECT_EQ(n->delete_stream("s1").code(), Errc::not_found);
    EXPECT_EQ(n->stream("s1").code(), Errc::not_found);
    // The handle the producer still holds is closed, not a crash.
    auto late = (*s1)->append({BytesView("late")});
    EXPECT_EQ(late.code(), Errc::closed);
    ASSERT_NO_FATAL_FAILURE(expect_intact(*n, "s2", kept_next));

    // The name again: an empty stream, uploaded as a new one.
    auto again = n->create_stream("s1");
    ASSERT_OK(again);
    EXPECT_EQ((*again)->first_offset(), 0u);
    EXPECT_EQ((*again)->committed_next(), 0u);
    uint64_t next = append_values(**again, 30);
    ASSERT_OK(n->flush("s1", std::chrono::seconds(30)));
    auto view = read_remote(n->store(), n->catalog(), "t", "s1");
    for (const auto& e : view.errors) ADD_FAILURE() << e;
    ASSERT_EQ(view.records.size(), next) << "only the new records";
    for (const auto& [off, val] : view.records) ASSERT_EQ(val, value_of(off));
    ASSERT_OK(n->close());
  }
  // And after a restart.
  auto n = open_node(dir);
  ASSERT_TRUE(n);
  EXPECT_TRUE(n->pending_deletions().empty());
  ASSERT_NO_FATAL_FAILURE(expect_intact(*n, "s2", kept_next));
  ASSERT_NO_FATAL_FAILURE(expect_intact(*n, "s1", 300));
  ASSERT_OK(n->close());
}

TEST(NodeDelete, UnknownStreamsAreNotFound) {
  TempDir tmp;
  auto n = open_node(tmp.sub("node"));
  ASSERT_TRUE(n);
  Status s = n->delete_stream("nope");
  EXPECT_EQ(s.code(), Errc::not_found);
  EXPECT_NE(s.error().message.find("nope"), std::string::npos);
  ASSERT_OK(n->close());
  EXPECT_EQ(n->delete_stream("nope").code(), Errc::closed);
}

// A reader open on the stream, one waiting for new records, and the remote
// view through the manifest cache: each ends with a clean error.
TEST(NodeDelete, ReadersOfADeletedStreamGetCleanErrors) {
  TempDir tmp;
  auto n = open_node(tmp.sub("node"));
  ASSERT_TRUE(n);
  auto log = n->create_stream("s1");
  ASSERT_OK(log);
  uint64_t next = append_values(**log, 50);
  ASSERT_OK(n->flush("s1", std::chrono::seconds(30)));
  ASSERT_OK(n->cache().get("s1"));
  auto reader = (*log)->open_reader(log::OffsetSpec::first());
  ASSERT_OK(reader);
  std::vector<log::Record> recs;
  auto got = (*reader)->next_records(&recs);
  ASSERT_OK(got);
  ASSERT_GT(*got, 0u);

  // A tail reader blocked on the next offset while the deletion runs.
  std::promise<bool> woke;
  std::thread tail(
      [&] { woke.set_value((*log)->wait_for_commit(next, std::chrono::seconds(60))); });
  while ((*log)->commit_waiters() == 0) std::this_thread::yield();
  ASSERT_OK(n->delete_stream("s1"));
  auto f = woke.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_FALSE(f.get()) << "no record was committed";
  tail.join();

  for (;;) {
    recs.clear();
    auto more = (*reader)->next_records(&recs);
    if (!more.ok()) {
      EXPECT_EQ(more.code(), Errc::closed) << more.error().to_string();
      break;
    }
    ASSERT_GT(*more, 0u) << "a reader of a deleted stream must not look like an idle one";
  }
  EXPECT_EQ((*log)->open_reader(log::OffsetSpec::first()).code(), Errc::closed);
  EXPECT_EQ(n->cache().get("s1").code(), Errc::unavailable);
  ASSERT_OK(n->close());
}

// As after a crash right after the marker was written: the node opens
// without the stream, finishes the deletion in the background, and until
// then the name can be neither opened nor created.
TEST(NodeDelete, APendingDeletionFoundAtOpenIsFinishedInTheBackground) {
  TempDir tmp;
  const std::string dir = tmp.sub("node");
  const int kStreams = 12;
  uint64_t kept_next = 0;
  {
    auto n = open_node(dir);
    ASSERT_TRUE(n);
    for (int i = 0; i < kStreams; ++i) {
      auto log = n->create_stream(fmt::format("d{}", i));
      ASSERT_OK(log);
      append_values(**log, 20);
      ASSERT_OK(n->flush(fmt::format("d{}", i), std::chrono::seconds(30)));
    }
    auto keep = n->create_stream("keep");
    ASSERT_OK(keep);
    kept_next = append_values(**keep, 20);
    ASSERT_OK(n->flush("keep", std::chrono::seconds(30)));
    ASSERT_OK(n->close());
  }
  for (int i = 0; i < kStreams; ++i) {
    DeletionMarker m;
    m.stream = fmt::format("d{}", i);
    m.requested_at_ms = 42;
    ASSERT_OK(write_deletion_marker(posix_fs(), dir + "/deletions", m));
  }
  auto n = open_node(dir);
  ASSERT_TRUE(n);
  // None of them was opened, whatever the background has done yet.
  EXPECT_EQ(n->streams(), std::vector<std::string>{"keep"});
  for (int i = 0; i < kStreams; ++i) {
    std::string s = fmt::format("d{}", i);
    auto c = n->create_stream(s);
    if (!c.ok()) {
      EXPECT_EQ(c.code(), Errc::unavailable) << c.error().to_string();
      EXPECT_NE(c.error().message.find("being deleted"), std::string::npos);
    } else {
      // Its deletion finished first: then it is a new, empty stream.
      EXPECT_EQ((*c)->committed_next(), 0u);
      EXPECT_TRUE(remote_keys(*n, s).empty());
      ASSERT_OK(n->delete_stream(s));
    }
  }
  ASSERT_OK(n->await_deletions(std::chrono::seconds(60)));
  for (int i = 0; i < kStreams; ++i) expect_gone(*n, dir, fmt::format("d{}", i));
  ASSERT_NO_FATAL_FAILURE(expect_intact(*n, "keep", kept_next));
  EXPECT_EQ(n->status_json()["deletions"], nlohmann::json::object());
  ASSERT_OK(n->close());
}

// A marker that cannot be read: nothing is deleted on its word, the stream
// stays hidden, status and delete_stream say why; removing the marker
// gives the stream back whole.
TEST(NodeDelete, AnUnreadableMarkerBlocksTheDeletionAndLosesNothing) {
  TempDir tmp;
  const std::string dir = tmp.sub("node");
  uint64_t next = 0;
  {
    auto n = open_node(dir);
    ASSERT_TRUE(n);
    auto log = n->create_stream("s1");
    ASSERT_OK(log);
    next = append_values(**log, 40);
    ASSERT_OK(n->flush("s1", std::chrono::seconds(30)));
    ASSERT_OK(n->close());
  }
  ASSERT_OK(create_dirs(posix_fs(), dir + "/deletions"));
  const std::string marker = dir + "/deletions/s1.json";
  ASSERT_OK(write_file_atomic(posix_fs(), marker, "{torn"));
  {
    auto n = open_node(dir);
    ASSERT_TRUE(n);
    EXPECT_TRUE(n->streams().empty());
    EXPECT_EQ(n->stream("s1").code(), Errc::not_found);
    EXPECT_EQ(n->create_stream("s1").code(), Errc::unavailable);
    nlohmann::json d = n->status_json()["deletions"]["s1"];
    EXPECT_EQ(d["state"], "blocked") << d.dump();
    EXPECT_NE(d["last_error"].get<std::string>().find(marker), std::string::npos) << d.dump();
    Status s = n->delete_stream("s1");
    EXPECT_EQ(s.code(), Errc::fatal);
    EXPECT_NE(s.error().message.find("not a JSON object"), std::string::npos) << s.to_string();
    EXPECT_EQ(n->await_deletions(std::chrono::seconds(5)).code(), Errc::fatal);
    EXPECT_FALSE(remote_keys(*n, "s1").empty());
    ASSERT_OK(n->catalog().get("s1"));
    ASSERT_OK(n->close());
  }
  ASSERT_OK(posix_fs().remove(marker));
  auto n = open_node(dir);
  ASSERT_TRUE(n);
  ASSERT_NO_FATAL_FAILURE(expect_intact(*n, "s1", next));
  ASSERT_OK(n->close());
}

TEST(NodeDelete, ASecondNodeOnTheSameDataDirectoryIsRefused) {
  TempDir tmp;
  const std::string dir = tmp.sub("node");
  auto n = open_node(dir);
  ASSERT_TRUE(n);
  auto second = Node::open(config_at(dir));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.code(), Errc::conflict);
  EXPECT_NE(second.error().message.find("data directory " + dir + " is in use by another process"),
            std::string::npos)
      << second.error().to_string();
  ASSERT_OK(n->close());
  auto third = Node::open(config_at(dir));
  ASSERT_OK(third);
  ASSERT_OK((*third)->close());
}

// Without tiering there is no uploader to stop; the deletion still clears
// whatever an earlier tiered life left under the prefix.
TEST(NodeDelete, WorksWithTieringDisabled) {
  TempDir tmp;
  const std::string dir = tmp.sub("node");
  {
    auto n = open_node(dir);
    ASSERT_TRUE(n);
    auto log = n->create_stream("s1");
    ASSERT_OK(log);
    append_values(**log, 40);
    ASSERT_OK(n->flush("s1", std::chrono::seconds(30)));
    ASSERT_OK(n->close());
  }
  auto doc = small_node_doc();
  doc["tiering"]["enabled"] = false;
  auto n = Node::open(config_at(dir, doc));
  ASSERT_OK(n);
  EXPECT_FALSE(remote_keys(**n, "s1").empty());
  ASSERT_OK((*n)->delete_stream("s1"));
  expect_gone(**n, dir, "s1");
  ASSERT_OK((*n)->close());
}

}  // namespace
}  // namespace strata::node
