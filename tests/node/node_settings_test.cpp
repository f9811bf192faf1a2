// A node's streams with their own settings: persisted with the stream,
// loaded at every open, applied to the segment size and to retention (local
// and remote), shown in status, refused when damaged, removed with the
// stream.
#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "log/recovery.h"
#include "node/node.h"
#include "node/node_test_util.h"
#include "node/stream_settings_file.h"
#include "support/assertions.h"
#include "support/temp_dir.h"

namespace strata::node {
namespace {

using strata::test::TempDir;
using namespace strata::node::test;

nlohmann::json local_doc() {
  auto doc = small_node_doc();
  doc["tiering"]["enabled"] = false;
  return doc;
}

uint64_t local_bytes(log::StreamLog& log) {
  uint64_t b = 0;
  for (const auto& s : log.segments()) b += s.size_bytes;
  return b;
}

// The uploader's status once its remote tier holds at most `bound` bytes
// (retention runs in the background), or after 30 s.
tier::UploaderStatus remote_bytes_at_most(tier::Uploader& up, uint64_t bound) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (up.status().remote_bytes > bound && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return up.status();
}

TEST(NodeSettings, PersistedWithTheStreamAndLoadedAtEveryOpen) {
  TempDir tmp;
  StreamSettings s{.max_bytes = 1 << 20, .segment_bytes = 8192, .fragment_target_bytes = 4096};
  {
    auto n = open_node(tmp.path());
    ASSERT_TRUE(n);
    ASSERT_OK(n->create_stream("s1", s));
    ASSERT_OK(n->create_stream("plain"));
    auto got = n->stream_settings("s1");
    ASSERT_OK(got);
    EXPECT_EQ(*got, s);
    ASSERT_OK(n->close());
  }
  EXPECT_TRUE(exists(posix_fs(), tmp.sub("streams/s1/settings.json")));
  auto n = open_node(tmp.path());
  ASSERT_TRUE(n);
  auto got = n->stream_settings("s1");
  ASSERT_OK(got);
  EXPECT_EQ(*got, s);
  auto eff = n->effective_settings("s1");
  ASSERT_OK(eff);
  EXPECT_EQ(eff->segment_bytes, 8192u);
  EXPECT_EQ(eff->fragment_target_bytes, 4096u);
  EXPECT_EQ(eff->remote_retention.max_bytes, 1u << 20);
  auto st = n->status_json()["streams"];
  EXPECT_EQ(st["s1"]["settings"]["max_bytes"], 1 << 20) << st.dump();
  EXPECT_EQ(st["s1"]["effective"]["segment_bytes"], 8192) << st.dump();
  EXPECT_EQ(st["s1"]["effective"]["remote_retention"]["max_bytes"], 1 << 20) << st.dump();
  EXPECT_EQ(st["plain"]["settings"], nlohmann::json::object()) << st.dump();
  EXPECT_EQ(st["plain"]["effective"]["segment_bytes"], 64 << 10) << st.dump();
}

TEST(NodeSettings, AStreamWithoutASettingsFileRunsWithTheNodesConfiguration) {
  // As every stream created before per-stream settings existed.
  TempDir tmp;
  {
    auto n = open_node(tmp.path(), local_doc());
    ASSERT_TRUE(n);
    ASSERT_OK(n->create_stream("old", {.segment_bytes = 8192}));
    ASSERT_OK(n->close());
  }
  ASSERT_OK(posix_fs().remove(tmp.sub("streams/old/settings.json")));
  auto n = open_node(tmp.path(), local_doc());
  ASSERT_TRUE(n);
  auto got = n->stream_settings("old");
  ASSERT_OK(got);
  EXPECT_TRUE(got->empty());
  EXPECT_EQ(n->effective_settings("old")->segment_bytes, 64u << 10);
}

TEST(NodeSettings, SegmentSizeApplies) {
  TempDir tmp;
  auto n = open_node(tmp.path(), local_doc());
  ASSERT_TRUE(n);
  auto small = n->create_stream("small", {.segment_bytes = 8192});
  auto dflt = n->create_stream("default");
  ASSERT_OK(small);
  ASSERT_OK(dflt);
  // 60 chunks of ~3 KiB: 180 KiB.
  append_values(**small, 60);
  append_values(**dflt, 60);
  auto segs = (*small)->segments();
  EXPECT_GE(segs.size(), 20u);
  for (const auto& s : segs) EXPECT_LE(s.size_bytes, 8192u + 4096u) << s.file;
  EXPECT_LE((*dflt)->segments().size(), 4u);  // 64 KiB segments
}

TEST(NodeSettings, MaxBytesIsTheRetentionOfALocalStream) {
  TempDir tmp;
  auto n = open_node(tmp.path(), local_doc());
  ASSERT_TRUE(n);
  auto lim = n->create_stream("lim", {.max_bytes = 32 << 10, .segment_bytes = 8192});
  auto keep = n->create_stream("keep", {.segment_bytes = 8192});
  ASSERT_OK(lim);
  ASSERT_OK(keep);
  uint64_t next = append_values(**lim, 100);
  append_values(**keep, 100);
  // Retention runs at every roll: the last roll left at most the limit and
  // the active segment.
  EXPECT_GT((*lim)->first_offset(), next / 2);
  EXPECT_LE(local_bytes(**lim), (32u << 10) + 2 * 8192u);
  EXPECT_EQ((*keep)->first_offset(), 0u);
}

TEST(NodeSettings, MaxAgeIsTheRetentionOfALocalStream) {
  TempDir tmp;
  auto n = open_node(tmp.path(), local_doc());
  ASSERT_TRUE(n);
  auto aged = n->create_stream("aged", {.max_age_ms = 300, .segment_bytes = 8192});
  ASSERT_OK(aged);
  uint64_t old_next = append_values(**aged, 10);
  // Let the chunks written so far age past 300 ms (by the log's clock, the
  // system clock for a node's streams): this wait is the condition tested.
  auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(400)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  append_values(**aged, 10);  // rolls segments: retention runs
  ASSERT_OK((*aged)->apply_retention());
  EXPECT_GE((*aged)->first_offset(), old_next - 30);  // at most the segment being written
  EXPECT_GT((*aged)->first_offset(), 0u);
}

TEST(NodeSettings, TieredRetentionDropsOnlyWhatIsPersistedAndTrimsTheRemoteTier) {
  TempDir tmp;
  auto n = open_node(tmp.path());
  ASSERT_TRUE(n);
  auto log = n->create_stream("s1", {.max_bytes = 64 << 10, .segment_bytes = 8192});
  ASSERT_OK(log);
  auto up = n->uploader("s1");
  ASSERT_TRUE(up);
  uint64_t next = 0;
  for (int i = 0; i < 30; ++i) {
    next = append_values(**log, 10);
    // The tiering hook vetoes dropping a segment not yet persisted remotely.
    ASSERT_LE((*log)->first_offset(), up->persisted_next());
  }
  ASSERT_OK(n->flush("s1", std::chrono::seconds(30)));
  ASSERT_OK((*log)->apply_retention());
  EXPECT_GT((*log)->first_offset(), 0u);
  EXPECT_LE(local_bytes(**log), (64u << 10) + 2 * 8192u);
  // The remote tier holds the same bound (within a fragment: 16 KiB here).
  up->request_retention();
  const uint64_t bound = (64u << 10) + (20u << 10);
  auto st = remote_bytes_at_most(*up, bound);
  EXPECT_GT(st.remote_first_offset, 0u);
  EXPECT_EQ(st.remote_next_offset, next);
  EXPECT_LE(st.remote_bytes, bound);
}

TEST(NodeSettings, AStreamKeptLocalOnATieredNodeHasNoUploader) {
  TempDir tmp;
  auto n = open_node(tmp.path());
  ASSERT_TRUE(n);
  auto log =
      n->create_stream("loc", {.max_bytes = 16 << 10, .segment_bytes = 8192, .tiering = false});
  ASSERT_OK(log);
  EXPECT_FALSE(n->uploader("loc"));
  append_values(**log, 40);
  EXPECT_GT((*log)->first_offset(), 0u);  // nothing to wait for: no remote tier
  EXPECT_EQ(n->flush("loc", std::chrono::seconds(1)).error().code, Errc::unavailable);
  EXPECT_EQ(n->status_json()["streams"]["loc"]["effective"]["tiering"], false);
}

TEST(NodeSettings, CreatingAnExistingStreamAgainIsRefusedWhateverTheSettings) {
  TempDir tmp;
  auto n = open_node(tmp.path());
  ASSERT_TRUE(n);
  ASSERT_OK(n->create_stream("s1", {.max_bytes = 1 << 20}));
  auto again = n->create_stream("s1", {.max_bytes = 2 << 20});
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, Errc::already_exists);
  // Even with settings this node would refuse.
  again = n->create_stream("s1", {.segment_bytes = 1});
  EXPECT_EQ(again.error().code, Errc::already_exists);
  EXPECT_EQ(n->stream_settings("s1")->max_bytes, 1u << 20);
  auto bad = n->create_stream("s2", {.segment_bytes = 1});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Errc::invalid_argument);
  EXPECT_FALSE(exists(posix_fs(), tmp.sub("streams/s2")));
}

TEST(NodeSettings, ADamagedSettingsFileFailsTheOpenNamingIt) {
  TempDir tmp;
  {
    auto n = open_node(tmp.path());
    ASSERT_TRUE(n);
    ASSERT_OK(n->create_stream("s1", {.max_bytes = 1 << 20}));
    ASSERT_OK(n->create_stream("s2"));
    ASSERT_OK(n->close());
  }
  const std::string file = tmp.sub("streams/s1/settings.json");
  auto bytes = read_file(posix_fs(), file);
  ASSERT_OK(bytes);
  std::string damaged = *bytes;
  damaged.replace(damaged.find("1048576"), 7, "9999999");
  ASSERT_OK(write_file_atomic(posix_fs(), file, damaged));
  auto cfg = load_node_config(small_node_doc(), tmp.path(), objstore::process_env());
  ASSERT_OK(cfg);
  auto n = Node::open(*cfg);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.error().code, Errc::corrupt);
  EXPECT_NE(n.error().message.find(file), std::string::npos) << n.error().message;
  EXPECT_NE(n.error().message.find("CRC32C"), std::string::npos) << n.error().message;
  // Nothing was changed: restoring the file opens the node as before.
  ASSERT_OK(write_file_atomic(posix_fs(), file, *bytes));
  auto ok = open_node(tmp.path());
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->stream_settings("s1")->max_bytes, 1u << 20);
}

TEST(NodeSettings, DeletedWithTheStreamAndACreateAfterGetsItsOwn) {
  TempDir tmp;
  auto n = open_node(tmp.path());
  ASSERT_TRUE(n);
  ASSERT_OK(n->create_stream("s1", {.max_bytes = 1 << 20}));
  ASSERT_OK(n->delete_stream("s1"));
  EXPECT_FALSE(exists(posix_fs(), tmp.sub("streams/s1")));
  ASSERT_OK(n->create_stream("s1", {.max_age_ms = 5000}));
  auto s = n->stream_settings("s1");
  ASSERT_OK(s);
  EXPECT_EQ(*s, (StreamSettings{.max_age_ms = 5000}));
}

TEST(NodeSettings, ALostLocalLogRecreatedAfterTheRemoteTierKeepsItsSettings) {
  TempDir tmp;
  StreamSettings s{.max_bytes = 1 << 20, .segment_bytes = 8192};
  {
    auto n = open_node(tmp.path());
    ASSERT_TRUE(n);
    auto log = n->create_stream("s1", s);
    ASSERT_OK(log);
    append_values(**log, 20);
    ASSERT_OK(n->flush("s1", std::chrono::seconds(30)));
    ASSERT_OK(n->close());
  }
  // Segments lost, settings kept (a partial restore): the node restarts the
  // log after the remote tier in a new directory, with the same settings.
  auto names = posix_fs().list_dir(tmp.sub("streams/s1"));
  ASSERT_OK(names);
  for (const auto& f : *names) {
    if (f != "settings.json") ASSERT_OK(posix_fs().remove(tmp.sub("streams/s1/" + f)));
  }
  ASSERT_OK(log::create_segment_files(posix_fs(), tmp.sub("streams/s1"), 0));
  auto n = open_node(tmp.path());
  ASSERT_TRUE(n);
  EXPECT_EQ(n->status_json()["node"]["local_resets"], 1);
  auto got = n->stream_settings("s1");
  ASSERT_OK(got);
  EXPECT_EQ(*got, s);
  EXPECT_EQ(read_settings_file(posix_fs(), tmp.sub("streams/s1"))->max_bytes, 1u << 20);
}

TEST(NodeSettings, AlteringALocalStreamsRetentionAppliesAtOnceAndIsKept) {
  TempDir tmp;
  uint64_t next = 0;
  {
    auto n = open_node(tmp.path(), local_doc());
    ASSERT_TRUE(n);
    auto log = n->create_stream("s1", {.segment_bytes = 8192});
    ASSERT_OK(log);
    next = append_values(**log, 100);
    ASSERT_EQ((*log)->first_offset(), 0u);
    ASSERT_OK(n->alter_stream("s1", {.max_bytes = 32 << 10, .segment_bytes = 8192}));
    // Applied by the alteration itself, not at the next roll.
    EXPECT_GT((*log)->first_offset(), next / 2);
    EXPECT_LE(local_bytes(**log), (32u << 10) + 2 * 8192u);
    EXPECT_EQ(n->effective_settings("s1")->local_retention.max_bytes, 32u << 10);
    EXPECT_EQ(n->status_json()["streams"]["s1"]["settings"]["max_bytes"], 32 << 10);
    // And at every roll after.
    const uint64_t first = (*log)->first_offset();
    next = append_values(**log, 100);
    EXPECT_GT((*log)->first_offset(), first);
    EXPECT_LE(local_bytes(**log), (32u << 10) + 2 * 8192u);
    ASSERT_OK(n->close());
  }
  // Kept: the next open runs the stream with it.
  EXPECT_EQ(read_settings_file(posix_fs(), tmp.sub("streams/s1"))->max_bytes, 32u << 10);
  auto n = open_node(tmp.path(), local_doc());
  ASSERT_TRUE(n);
  EXPECT_EQ(*n->stream_settings("s1"), (StreamSettings{.max_bytes = 32 << 10, .segment_bytes = 8192}));
  // Removing the limit: the node's configuration (none here) applies again.
  ASSERT_OK(n->alter_stream("s1", {.segment_bytes = 8192}));
  auto log = n->stream("s1");
  ASSERT_OK(log);
  const uint64_t first = (*log)->first_offset();
  append_values(**log, 100);
  EXPECT_EQ((*log)->first_offset(), first);
  EXPECT_FALSE(read_settings_file(posix_fs(), tmp.sub("streams/s1"))->max_bytes);
}

TEST(NodeSettings, OnlyTheRetentionOfALiveStreamChanges) {
  TempDir tmp;
  auto n = open_node(tmp.path());
  ASSERT_TRUE(n);
  const StreamSettings s{.max_bytes = 1 << 20, .segment_bytes = 8192};
  ASSERT_OK(n->create_stream("s1", s));
  const std::string file = tmp.sub("streams/s1/settings.json");
  auto before = read_file(posix_fs(), file);
  ASSERT_OK(before);
  auto refused = [&](const StreamSettings& to, Errc code, const std::string& names) {
    Status st = n->alter_stream("s1", to);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code, code);
    EXPECT_NE(st.error().message.find(names), std::string::npos) << st.error().message;
  };
  refused({.max_bytes = 1 << 20, .segment_bytes = 16384}, Errc::invalid_argument, "segment_bytes");
  refused({.max_bytes = 1 << 20, .segment_bytes = 8192, .confirm = ConfirmMode::remote},
          Errc::invalid_argument, "confirm");
  refused({.max_bytes = 0, .segment_bytes = 8192}, Errc::invalid_argument, "max_bytes");
  refused({.max_age_ms = -5, .segment_bytes = 8192}, Errc::invalid_argument, "max_age_ms");
  Status absent = n->alter_stream("nope", {});
  EXPECT_EQ(absent.error().code, Errc::not_found);
  // Nothing refused was kept or applied.
  EXPECT_EQ(*read_file(posix_fs(), file), *before);
  EXPECT_EQ(*n->stream_settings("s1"), s);
  EXPECT_EQ(n->effective_settings("s1")->remote_retention.max_bytes, 1u << 20);
}

TEST(NodeSettings, AlteringATieredStreamsRetentionTrimsBothTiers) {
  TempDir tmp;
  auto n = open_node(tmp.path());
  ASSERT_TRUE(n);
  auto log = n->create_stream("s1", {.segment_bytes = 8192});
  ASSERT_OK(log);
  auto up = n->uploader("s1");
  ASSERT_TRUE(up);
  uint64_t next = append_values(**log, 300);
  ASSERT_OK(n->flush("s1", std::chrono::seconds(30)));
  ASSERT_EQ(up->status().remote_first_offset, 0u);
  ASSERT_OK(n->alter_stream("s1", {.max_bytes = 64 << 10, .segment_bytes = 8192}));
  EXPECT_GT((*log)->first_offset(), 0u);
  EXPECT_LE(local_bytes(**log), (64u << 10) + 2 * 8192u);
  // The remote tier too, without a restart (within a fragment: 16 KiB).
  const uint64_t bound = (64u << 10) + (20u << 10);
  auto st = remote_bytes_at_most(*up, bound);
  EXPECT_GT(st.remote_first_offset, 0u);
  EXPECT_EQ(st.remote_next_offset, next);
  EXPECT_LE(st.remote_bytes, bound);
  EXPECT_EQ(n->effective_settings("s1")->remote_retention.max_bytes, 64u << 10);
}

}  // namespace
}  // namespace strata::node
