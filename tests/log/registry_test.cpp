// StreamRegistry: many streams per data directory, create/open/delete.
#include "log/registry.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "common/fault_fs.h"
#include "common/name_component.h"
#include "log/log_test_util.h"
#include "support/temp_dir.h"

namespace strata::log {
namespace {

TEST(LogRegistry, CreateOpenListRemove) {
  strata::test::TempDir tmp;
  auto reg = *StreamRegistry::open(tmp.sub("data"));
  auto a = reg->create("alpha");
  ASSERT_TRUE(a.ok()) << a.error().to_string();
  ASSERT_TRUE((*a)->append({"1", "2"}).ok());
  ASSERT_TRUE(reg->create("beta.2_x-y").ok());
  EXPECT_EQ(reg->create("alpha").code(), Errc::already_exists);
  EXPECT_EQ(*reg->list(), (std::vector<std::string>{"alpha", "beta.2_x-y"}));
  // Opening an open stream returns the same log.
  auto again = reg->open_stream("alpha");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->get(), a->get());
  EXPECT_EQ(reg->open_stream("gamma").code(), Errc::not_found);
  // Remove closes the open log: its readers and appenders see `closed`.
  auto reader = *(*a)->open_reader(OffsetSpec::first());
  ASSERT_TRUE(reg->remove("alpha").ok());
  EXPECT_EQ((*a)->append({"3"}).code(), Errc::closed);
  EXPECT_EQ(reader->next_chunk().code(), Errc::closed);
  EXPECT_FALSE(reg->exists("alpha"));
  EXPECT_FALSE(exists(posix_fs(), tmp.sub("data/alpha")));
  EXPECT_EQ(reg->remove("alpha").code(), Errc::not_found);
  EXPECT_EQ(*reg->list(), std::vector<std::string>{"beta.2_x-y"});
  // A stream of the same name starts empty.
  auto fresh = reg->create("alpha");
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ((*fresh)->committed_next(), 0u);
}

TEST(LogRegistry, AStreamCanStartAtAGivenOffset) {
  strata::test::TempDir tmp;
  auto reg = *StreamRegistry::open(tmp.sub("data"));
  LogOptions o;
  o.first_offset = 1000;
  auto s = reg->create("late", o);
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  EXPECT_EQ((*s)->first_offset(), 1000u);
  EXPECT_EQ((*s)->committed_next(), 1000u);
  auto r = (*s)->append({"a", "b"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->first_offset, 1000u);
  ASSERT_TRUE((*s)->close().ok());
  // Reopened, it is where it was; readers from `first` start at 1000.
  reg.reset();
  reg = *StreamRegistry::open(tmp.sub("data"));
  auto again = reg->open_stream("late");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->local_range().first_offset, 1000u);
  EXPECT_EQ((*again)->committed_next(), 1002u);
  auto reader = (*again)->open_reader(OffsetSpec::first());
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->next_offset(), 1000u);
}

TEST(LogRegistry, DataSurvivesReopeningTheRegistry) {
  strata::test::TempDir tmp;
  {
    auto reg = *StreamRegistry::open(tmp.sub("data"));
    for (int i = 0; i < 20; ++i) {
      auto s = *reg->create("s" + std::to_string(i));
      ASSERT_TRUE(s->append({test::payload_for(i)}).ok());
    }
  }
  auto reg = *StreamRegistry::open(tmp.sub("data"));
  EXPECT_EQ(reg->list()->size(), 20u);
  for (int i = 0; i < 20; ++i) {
    auto s = reg->open_stream("s" + std::to_string(i));
    ASSERT_TRUE(s.ok());
    auto rb = test::read_all(**s);
    ASSERT_EQ(rb.records.size(), 1u);
    EXPECT_EQ(rb.records[0].second, test::payload_for(i));
  }
}

TEST(LogRegistry, BadNamesAreRefused) {
  strata::test::TempDir tmp;
  auto reg = *StreamRegistry::open(tmp.sub("data"));
  for (std::string bad : std::vector<std::string>{"", "amq.x", "caf\xc3", std::string(256, 'x'),
                                                  "\nnew\nline", "v\nnew\nline", "/\nx", "\nx"}) {
    auto r = reg->create(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.code(), Errc::invalid_argument);
    EXPECT_EQ(reg->remove(bad).code(), Errc::invalid_argument);
  }
}

// Any name as RabbitMQ allows it is a stream of its own, in a directory
// named by its component (common/name_component.h): "." and "..", '/',
// names like the registry's own entries, and long names (hashed; the
// directory holds the name) — and the registry's own entries never take
// a stream's place: a stream ".creating-x" survives reopening the
// registry, which removes leftover ".creating-*" entries.
TEST(LogRegistry, EveryNameIsAStreamInADirectoryOfItsOwn) {
  strata::test::TempDir tmp;
  const std::string data = tmp.sub("data");
  const std::string longest(255, 'n');
  std::vector<std::string> names = {".",
                                    "..",
                                    "a/b",
                                    "../escape",
                                    ".creating-x",
                                    ".deleting-x.0",
                                    "x",
                                    "x.tmp",
                                    "orders 2026/Q1 \xe2\x82\xac",
                                    longest,
                                    std::string(254, 'n') + "m",
                                    "a%2Fb"};
  {
    auto reg = *StreamRegistry::open(data);
    for (size_t i = 0; i < names.size(); ++i) {
      auto l = reg->create(names[i]);
      ASSERT_TRUE(l.ok()) << names[i] << ": " << l.error().to_string();
      ASSERT_TRUE((*l)->append({std::to_string(i)}).ok());
    }
  }
  // Nothing escaped the data directory, and every entry is a component.
  EXPECT_FALSE(exists(posix_fs(), tmp.sub("escape")));
  auto entries = posix_fs().list_dir(data);
  ASSERT_TRUE(entries.ok());
  EXPECT_EQ(entries->size(), names.size());
  for (const auto& e : *entries) EXPECT_TRUE(is_name_component(e)) << e;
  EXPECT_TRUE(exists(posix_fs(), path_join(stream_dir(data, longest), "name")));
  auto reg = *StreamRegistry::open(data);
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(*reg->list(), sorted);
  for (size_t i = 0; i < names.size(); ++i) {
    auto l = reg->open_stream(names[i]);
    ASSERT_TRUE(l.ok()) << names[i];
    auto rb = test::read_all(**l);
    ASSERT_EQ(rb.records.size(), 1u) << names[i];
    EXPECT_EQ(rb.records[0].second, std::to_string(i)) << names[i];
    auto ro = open_stream_read_only(data, names[i]);
    ASSERT_TRUE(ro.ok()) << names[i];
  }
  ASSERT_TRUE(reg->remove("a/b").ok());
  ASSERT_TRUE(reg->remove(longest).ok());
  EXPECT_TRUE(reg->exists("a%2Fb"));
  EXPECT_TRUE(reg->exists(std::string(254, 'n') + "m"));
  EXPECT_EQ(reg->list()->size(), names.size() - 2);
}

// A directory the registry did not make is never taken for a stream nor
// removed: a name that is no component, a hashed-looking one without its
// name file.
TEST(LogRegistry, ForeignDirectoriesAreSkippedNotRemoved) {
  strata::test::TempDir tmp;
  const std::string data = tmp.sub("data");
  ASSERT_TRUE(create_dirs(posix_fs(), data + "/not a component").ok());
  ASSERT_TRUE(create_dirs(posix_fs(), data + "/a%%" + std::string(64, 'a')).ok());
  auto reg = *StreamRegistry::open(data);
  ASSERT_TRUE(reg->create("s").ok());
  EXPECT_EQ(*reg->list(), std::vector<std::string>{"s"});
  EXPECT_TRUE(exists(posix_fs(), data + "/not a component"));
  EXPECT_TRUE(exists(posix_fs(), data + "/a%%" + std::string(64, 'a')));
}

TEST(LogRegistry, DataDirThatIsAFileIsAnError) {
  strata::test::TempDir tmp;
  ASSERT_TRUE(write_file_atomic(posix_fs(), tmp.sub("f"), "x").ok());
  auto r = StreamRegistry::open(tmp.sub("f"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find(tmp.sub("f")), std::string::npos);
}

TEST(LogRegistry, OpenFinishesInterruptedCreatesAndDeletes) {
  FaultFileSystem fs;
  LogOptions o;
  o.fs = &fs;
  ASSERT_TRUE(create_dirs(fs, "/data/.deleting-x.0/sub").ok());
  ASSERT_TRUE(create_dirs(fs, "/data/.creating-y").ok());
  ASSERT_TRUE(create_dirs(fs, "/data/keep").ok());
  auto reg = *StreamRegistry::open("/data", o);
  EXPECT_FALSE(exists(fs, "/data/.deleting-x.0"));
  EXPECT_FALSE(exists(fs, "/data/.creating-y"));
  EXPECT_TRUE(exists(fs, "/data/keep"));
}

TEST(LogRegistry, RemoveRefusesAStreamAnotherWriterHolds) {
  strata::test::TempDir tmp;
  auto reg = *StreamRegistry::open(tmp.sub("data"));
  ASSERT_TRUE(reg->create("s").ok());
  ASSERT_TRUE(reg->close_all().ok());
  LogOptions o;
  auto other = *StreamLog::open(tmp.sub("data/s"), o);  // "another process"
  auto st = reg->remove("s");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Errc::conflict);
  EXPECT_TRUE(reg->exists("s"));
  ASSERT_TRUE(other->close().ok());
  EXPECT_TRUE(reg->remove("s").ok());
}

}  // namespace
}  // namespace strata::log
