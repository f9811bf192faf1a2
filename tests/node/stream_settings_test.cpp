// Per-stream settings without a node: the rules that turn them into what a
// stream runs with, and the settings file's encoding and its damage.
#include "node/stream_settings.h"

#include <gtest/gtest.h>

#include "common/crc32c.h"
#include "node/owner_epoch_file.h"
#include "node/stream_settings_file.h"
#include "support/assertions.h"
#include "support/temp_dir.h"

namespace strata::node {
namespace {

NodeConfig node_cfg(bool tiering) {
  NodeConfig c;
  c.data_dir = "/nowhere";
  c.segment_bytes = 1 << 20;
  c.local_retention.max_bytes = 10 << 20;
  c.tiering.enabled = tiering;
  c.tiering.fragment_target_bytes = 4 << 20;
  c.tiering.fragment_max_age_ms = 5000;
  c.tiering.retention.max_age_ms = 86'400'000;
  return c;
}

TEST(StreamSettings, NoSettingsRunWithTheNodesConfiguration) {
  for (bool tiering : {false, true}) {
    NodeConfig c = node_cfg(tiering);
    EffectiveSettings e = effective_settings(c, {});
    EXPECT_EQ(e.segment_bytes, c.segment_bytes);
    EXPECT_EQ(e.local_retention.max_bytes, c.local_retention.max_bytes);
    EXPECT_EQ(e.local_retention.max_age_ms, std::nullopt);
    EXPECT_EQ(e.tiering, tiering);
    if (tiering) {
      EXPECT_EQ(e.fragment_target_bytes, c.tiering.fragment_target_bytes);
      EXPECT_EQ(e.fragment_max_age_ms, c.tiering.fragment_max_age_ms);
      EXPECT_EQ(e.remote_retention, c.tiering.retention);
    }
  }
}

TEST(StreamSettings, WithoutTieringTheStreamsRetentionIsTheLocalLogs) {
  StreamSettings s;
  s.max_bytes = 1 << 20;
  s.max_age_ms = 60'000;
  s.segment_bytes = 64 << 10;
  ASSERT_OK(validate_settings(node_cfg(false), s));
  EffectiveSettings e = effective_settings(node_cfg(false), s);
  EXPECT_EQ(e.segment_bytes, 64u << 10);
  EXPECT_EQ(e.local_retention.max_bytes, 1u << 20);
  EXPECT_EQ(e.local_retention.max_age_ms, 60'000);
  EXPECT_FALSE(e.tiering);
  // Larger than the node's local retention: the stream's replaces it.
  s.max_bytes = 100 << 20;
  EXPECT_EQ(effective_settings(node_cfg(false), s).local_retention.max_bytes, 100u << 20);
}

TEST(StreamSettings, WithTieringTheStreamsRetentionIsRemoteAndBoundsTheLocalLog) {
  NodeConfig c = node_cfg(true);
  StreamSettings s;
  s.max_bytes = 1 << 20;
  s.max_age_ms = 60'000;
  s.fragment_target_bytes = 256 << 10;
  s.fragment_max_age_ms = 100;
  ASSERT_OK(validate_settings(c, s));
  EffectiveSettings e = effective_settings(c, s);
  EXPECT_TRUE(e.tiering);
  EXPECT_EQ(e.remote_retention.max_bytes, 1u << 20);
  EXPECT_EQ(e.remote_retention.max_age_ms, 60'000);
  EXPECT_EQ(e.local_retention.max_bytes, 1u << 20);  // min(node's 10 MiB, 1 MiB)
  EXPECT_EQ(e.local_retention.max_age_ms, 60'000);
  EXPECT_EQ(e.fragment_target_bytes, 256u << 10);
  EXPECT_EQ(e.fragment_max_age_ms, 100);
  // local_max_bytes replaces the node's local size bound, still under max_bytes.
  s.local_max_bytes = 512 << 10;
  EXPECT_EQ(effective_settings(c, s).local_retention.max_bytes, 512u << 10);
  s.local_max_bytes = 2 << 20;
  EXPECT_EQ(effective_settings(c, s).local_retention.max_bytes, 1u << 20);
  s.max_bytes.reset();
  e = effective_settings(c, s);
  EXPECT_EQ(e.local_retention.max_bytes, 2u << 20);
  EXPECT_EQ(e.remote_retention.max_bytes, std::nullopt);  // the node's: none
}

// With neither log.retention nor a stream bound, a tiered stream keeps a
// stated budget of kDefaultLocalSegments of its segments locally; a local
// stream (its local log is all there is) keeps everything.
TEST(StreamSettings, ATieredStreamWithoutLocalBoundsKeepsTheDefaultLocalBudget) {
  NodeConfig c = node_cfg(true);
  c.local_retention = {};
  EXPECT_EQ(effective_settings(c, {}).local_retention.max_bytes,
            kDefaultLocalSegments * c.segment_bytes);
  EXPECT_EQ(effective_settings(c, {.segment_bytes = 64 << 10}).local_retention.max_bytes,
            kDefaultLocalSegments * (64u << 10));
  EXPECT_EQ(effective_settings(c, {.max_bytes = 1 << 20}).local_retention.max_bytes, 1u << 20);
  EXPECT_EQ(effective_settings(c, {.local_max_bytes = 9 << 20}).local_retention.max_bytes,
            9u << 20);
  EXPECT_EQ(effective_settings(c, {.tiering = false}).local_retention.max_bytes, std::nullopt);
  // A node bound by age only: that is its choice, no size budget is added.
  c.local_retention.max_age_ms = 3'600'000;
  EXPECT_EQ(effective_settings(c, {}).local_retention.max_bytes, std::nullopt);
  c.tiering.enabled = false;
  c.local_retention = {};
  EXPECT_EQ(effective_settings(c, {}).local_retention.max_bytes, std::nullopt);
}

TEST(StreamSettings, AStreamKeptLocalOnATieredNode) {
  StreamSettings s;
  s.tiering = false;
  s.max_bytes = 1 << 20;
  ASSERT_OK(validate_settings(node_cfg(true), s));
  EffectiveSettings e = effective_settings(node_cfg(true), s);
  EXPECT_FALSE(e.tiering);
  EXPECT_EQ(e.local_retention.max_bytes, 1u << 20);
}

// confirm: the stream's, else the node's; remote only where there is a
// remote tier, and a local stream never inherits remote silently.
TEST(StreamSettings, ConfirmModeIsTheStreamsElseTheNodesAndNeedsTheRemoteTier) {
  NodeConfig c = node_cfg(true);
  EXPECT_EQ(effective_settings(c, {}).confirm, ConfirmMode::local);
  StreamSettings remote{.confirm = ConfirmMode::remote};
  ASSERT_OK(validate_settings(c, remote));
  EXPECT_EQ(effective_settings(c, remote).confirm, ConfirmMode::remote);
  EXPECT_EQ(effective_to_json(effective_settings(c, remote))["confirm"], "remote");
  c.tiering.confirm = ConfirmMode::remote;
  EXPECT_EQ(effective_settings(c, {}).confirm, ConfirmMode::remote);
  EXPECT_EQ(effective_settings(c, {.confirm = ConfirmMode::local}).confirm, ConfirmMode::local);
  // A local stream on a node whose default is remote must say local.
  Status st = validate_settings(c, {.tiering = false});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("confirm"), std::string::npos) << st.error().message;
  ASSERT_OK(validate_settings(c, {.tiering = false, .confirm = ConfirmMode::local}));
  EXPECT_EQ(effective_settings(c, {.tiering = false, .confirm = ConfirmMode::local}).confirm,
            ConfirmMode::local);
  // No remote tier at all.
  Status none = validate_settings(node_cfg(false), remote);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, Errc::invalid_argument);
  EXPECT_NE(none.error().message.find("confirm"), std::string::npos) << none.error().message;
}

TEST(StreamSettings, SettingsThatWouldDoNothingAreRefusedNamingThem) {
  struct Case {
    bool node_tiering;
    StreamSettings s;
    std::string names;
  };
  std::vector<Case> cases(6);
  cases[0] = {false, {}, "tiering"};
  cases[0].s.tiering = true;
  cases[1] = {false, {}, "fragment_target_bytes"};
  cases[1].s.fragment_target_bytes = 1;
  cases[2] = {true, {}, "fragment_max_age_ms"};
  cases[2].s.tiering = false;
  cases[2].s.fragment_max_age_ms = 5;
  cases[3] = {true, {}, "local_max_bytes"};
  cases[3].s.tiering = false;
  cases[3].s.local_max_bytes = 5;
  cases[4] = {true, {}, "segment_bytes"};
  cases[4].s.segment_bytes = 100;
  cases[5] = {true, {}, "max_age_ms"};
  cases[5].s.max_age_ms = -1;
  for (const auto& c : cases) {
    Status st = validate_settings(node_cfg(c.node_tiering), c.s);
    ASSERT_FALSE(st.ok()) << c.names;
    EXPECT_EQ(st.error().code, Errc::invalid_argument);
    EXPECT_NE(st.error().message.find(c.names), std::string::npos) << st.error().message;
  }
}

TEST(StreamSettings, OnlyRetentionMayChangeOnALiveStream) {
  const StreamSettings from{.max_bytes = 1 << 20, .segment_bytes = 8192, .tiering = true};
  EXPECT_TRUE(check_alteration(from, from).ok());
  EXPECT_TRUE(check_alteration(from, {.max_age_ms = 1000,
                                      .segment_bytes = 8192,
                                      .tiering = true,
                                      .local_max_bytes = 4096})
                  .ok());
  auto refused = [&](const StreamSettings& to, std::string_view name) {
    Status st = check_alteration(from, to);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code, Errc::invalid_argument);
    EXPECT_NE(st.error().message.find(name), std::string::npos) << st.error().message;
  };
  refused({.max_bytes = 1 << 20, .tiering = true}, "segment_bytes");
  refused({.max_bytes = 1 << 20, .segment_bytes = 8192, .tiering = false}, "tiering");
  refused({.max_bytes = 1 << 20, .segment_bytes = 8192, .tiering = true, .filter_size_bytes = 32},
          "filter_size_bytes");
}

TEST(StreamSettingsFile, RoundTripsEverySetting) {
  StreamSettings s{.max_bytes = 1,
                   .max_age_ms = 2,
                   .segment_bytes = 4096,
                   .tiering = false,
                   .fragment_target_bytes = 5,
                   .fragment_max_age_ms = 6,
                   .local_max_bytes = 7,
                   .confirm = ConfirmMode::remote};
  auto back = decode_settings_file(encode_settings_file(s), "f");
  ASSERT_OK(back);
  EXPECT_EQ(*back, s);
  auto none = decode_settings_file(encode_settings_file({}), "f");
  ASSERT_OK(none);
  EXPECT_TRUE(none->empty());
}

TEST(StreamSettingsFile, DamageIsAnErrorNamingTheFile) {
  StreamSettings s{.max_bytes = 1048576};
  std::string good = encode_settings_file(s);
  auto flipped = good;
  flipped.replace(flipped.find("1048576"), 7, "1048577");
  std::vector<std::pair<std::string, Errc>> bad = {
      {"", Errc::corrupt},
      {good.substr(0, good.size() / 2), Errc::corrupt},
      {flipped, Errc::corrupt},
      {R"({"crc32c":0,"settings":{},"version":2})", Errc::unsupported_version},
      {R"({"settings":{},"version":1})", Errc::corrupt},
  };
  // A field this version does not know, with a correct CRC.
  nlohmann::json unknown = {{"max_bytes", 5}, {"colour", "red"}};
  bad.push_back(
      {nlohmann::json{
           {"version", 1}, {"settings", unknown}, {"crc32c", crc32c::value(unknown.dump())}}
           .dump(),
       Errc::corrupt});
  for (const auto& [bytes, code] : bad) {
    auto r = decode_settings_file(bytes, "/d/streams/s/settings.json");
    ASSERT_FALSE(r.ok()) << bytes;
    EXPECT_EQ(r.error().code, code) << r.error().message;
    EXPECT_NE(r.error().message.find("/d/streams/s/settings.json"), std::string::npos)
        << r.error().message;
  }
}

TEST(StreamSettingsFile, WrittenCrashAtomicallyAndAbsentMeansNone) {
  strata::test::TempDir tmp;
  auto none = read_settings_file(posix_fs(), tmp.path());
  ASSERT_OK(none);
  EXPECT_TRUE(none->empty());
  StreamSettings s{.max_age_ms = 1000};
  ASSERT_OK(write_settings_file(posix_fs(), tmp.path(), s));
  EXPECT_FALSE(exists(posix_fs(), tmp.sub("settings.json.tmp")));
  auto back = read_settings_file(posix_fs(), tmp.path());
  ASSERT_OK(back);
  EXPECT_EQ(*back, s);
}

// owner-epoch.json (docs/formats/data-dir.md#owner-epoch): absent is none,
// written crash-atomically and read back; anything else is an error naming
// the file (the take-back then treats it as absent).
TEST(OwnerEpochFile, WrittenAtomicallyReadBackAndDamageNamed) {
  strata::test::TempDir tmp;
  auto none = read_owner_epoch(posix_fs(), tmp.path());
  ASSERT_OK(none);
  EXPECT_FALSE(none->has_value());
  ASSERT_OK(write_owner_epoch(posix_fs(), tmp.path(), 41));
  ASSERT_OK(write_owner_epoch(posix_fs(), tmp.path(), 42));
  EXPECT_FALSE(exists(posix_fs(), tmp.sub("owner-epoch.json.tmp")));
  auto back = read_owner_epoch(posix_fs(), tmp.path());
  ASSERT_OK(back);
  EXPECT_EQ(*back, std::optional<uint64_t>(42));
  for (const std::string bad : {"{\"version\":2,\"epoch\":3}", "{\"version\":1}",
                                "{\"version\":1,\"epoch\":-1}", "not json", ""}) {
    ASSERT_OK(write_file_atomic(posix_fs(), tmp.sub("owner-epoch.json"), bad));
    auto r = read_owner_epoch(posix_fs(), tmp.path());
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.code(), Errc::corrupt) << bad;
    EXPECT_NE(r.error().message.find(tmp.sub("owner-epoch.json")), std::string::npos)
        << r.error().message;
  }
}

}  // namespace
}  // namespace strata::node
