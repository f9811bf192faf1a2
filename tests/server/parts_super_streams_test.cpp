// SuperStreams: create (partitions through the callback), route by exact
// binding key, partitions in order, delete, persistence across reopen and
// crashes (FaultFileSystem), clear errors for bad names and keys.
#include <gtest/gtest.h>

#include <set>

#include "common/fault_fs.h"
#include "server/super_streams.h"
#include "support/temp_dir.h"

namespace strata::server {
namespace {

// Stands in for the node's streams.
struct FakeStreams {
  std::set<std::string> streams;
  std::string fail_on;  // create of this name fails
  SuperStreams::StreamFn create() {
    return [this](const std::string& s) -> Status {
      if (s == fail_on) return Error(Errc::io, "disk full (test)");
      if (!streams.insert(s).second) return Error(Errc::already_exists, "stream " + s + " exists");
      return Status::OK();
    };
  }
  SuperStreams::StreamFn remove() {
    return [this](const std::string& s) -> Status {
      if (!streams.erase(s)) return Error(Errc::not_found, "stream " + s + " does not exist");
      return Status::OK();
    };
  }
};

SuperStream invoices() {
  return SuperStream{"invoices", {"invoices-0", "invoices-1", "invoices-2"}, {"0", "1", "2"}};
}

TEST(SuperStreams, CreateRoutePartitionsDeleteAndReopen) {
  test::TempDir dir;
  FakeStreams fs;
  {
    auto s = SuperStreams::open(dir.sub("ss"));
    ASSERT_TRUE(s.ok()) << s.error().message;
    ASSERT_TRUE((*s)->create(invoices(), fs.create(), fs.remove()).ok());
    EXPECT_EQ(fs.streams, (std::set<std::string>{"invoices-0", "invoices-1", "invoices-2"}));
    EXPECT_EQ((*s)->create(invoices(), fs.create(), fs.remove()).code(), Errc::already_exists);
    EXPECT_EQ(*(*s)->route("invoices", "1"), std::vector<std::string>{"invoices-1"});
    EXPECT_TRUE((*s)->route("invoices", "7")->empty());
    EXPECT_TRUE((*s)->route("invoices", "")->empty());
    EXPECT_EQ((*s)->route("nope", "1").error().code, Errc::not_found);
    EXPECT_EQ(*(*s)->partitions("invoices"), invoices().partitions);
    EXPECT_EQ((*s)->super_stream_of("invoices-2"), "invoices");
    EXPECT_FALSE((*s)->super_stream_of("other"));
  }
  auto s = SuperStreams::open(dir.sub("ss"));
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(*(*s)->partitions("invoices"), invoices().partitions);
  EXPECT_EQ(*(*s)->route("invoices", "2"), std::vector<std::string>{"invoices-2"});
  ASSERT_TRUE((*s)->remove("invoices", fs.remove()).ok());
  EXPECT_TRUE(fs.streams.empty());
  EXPECT_EQ((*s)->partitions("invoices").error().code, Errc::not_found);
  EXPECT_EQ((*s)->remove("invoices", fs.remove()).code(), Errc::not_found);
  auto again = SuperStreams::open(dir.sub("ss"));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE((*again)->names().empty());
}

TEST(SuperStreams, AFailedPartitionUndoesTheCreate) {
  test::TempDir dir;
  FakeStreams fs;
  fs.fail_on = "invoices-2";
  auto s = SuperStreams::open(dir.sub("ss"));
  ASSERT_TRUE(s.ok());
  Status st = (*s)->create(invoices(), fs.create(), fs.remove());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("invoices-2"), std::string::npos) << st.error().message;
  EXPECT_TRUE(fs.streams.empty());
  EXPECT_TRUE((*s)->names().empty());
  // An existing stream as a partition: refused, nothing of ours is left.
  fs.fail_on.clear();
  fs.streams.insert("invoices-1");
  EXPECT_EQ((*s)->create(invoices(), fs.create(), fs.remove()).code(), Errc::already_exists);
  EXPECT_EQ(fs.streams, std::set<std::string>{"invoices-1"});
}

TEST(SuperStreams, BadDefinitionsAreRefusedClearly) {
  auto bad = [](SuperStream s) { return validate_super_stream(s); };
  EXPECT_EQ(bad({"", {"a"}, {"k"}}).code(), Errc::invalid_argument);
  EXPECT_EQ(bad({"s/x", {"a"}, {"k"}}).code(), Errc::invalid_argument);
  EXPECT_EQ(bad({"s", {}, {}}).code(), Errc::invalid_argument);
  EXPECT_EQ(bad({"s", {"a", "b"}, {"k"}}).code(), Errc::invalid_argument);
  EXPECT_EQ(bad({"s", {"a", "a"}, {"k", "l"}}).code(), Errc::invalid_argument);
  EXPECT_EQ(bad({"s", {"a", "b"}, {"k", "k"}}).code(), Errc::invalid_argument);
  EXPECT_EQ(bad({"s", {"a"}, {""}}).code(), Errc::invalid_argument);
  EXPECT_EQ(bad({"s", {".."}, {"k"}}).code(), Errc::invalid_argument);
  EXPECT_EQ(bad({"s", {"a"}, {std::string(256, 'k')}}).code(), Errc::invalid_argument);
  Status st = bad({"s", {"a", "b"}, {"k", "k"}});
  EXPECT_NE(st.error().message.find("binding key k is used twice"), std::string::npos)
      << st.error().message;
  EXPECT_TRUE(bad({"s", {"a"}, {std::string(255, 'k')}}).ok());
}

TEST(SuperStreams, FileRoundTripsAndDamageIsCaught) {
  SuperStream s = invoices();
  Bytes b = encode_super_stream_file(s);
  auto back = decode_super_stream_file(b, "f");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, s);
  for (size_t i = 0; i < b.size(); ++i) {
    Bytes bad = b;
    bad[i] = char(bad[i] ^ 0x10);
    EXPECT_FALSE(decode_super_stream_file(bad, "f").ok()) << "flip at " << i;
  }
  for (size_t n = 0; n < b.size(); ++n) {
    EXPECT_FALSE(decode_super_stream_file(b.substr(0, n), "f").ok());
  }
}

// Power loss at every step of a create and of a delete: after restart the
// super stream either exists whole or does not exist at all.
TEST(SuperStreams, CrashAtEveryStepLeavesAllOrNothing) {
  for (uint64_t n = 0; n < 20; ++n) {
    for (bool deleting : {false, true}) {
      FaultFileSystem ffs;
      FakeStreams fs;
      if (deleting) {
        auto s = SuperStreams::open("/ss", &ffs);
        ASSERT_TRUE(s.ok());
        ASSERT_TRUE((*s)->create(invoices(), fs.create(), fs.remove()).ok());
      }
      {
        auto s = SuperStreams::open("/ss", &ffs);
        ASSERT_TRUE(s.ok()) << s.error().message;
        ffs.crash_after(n);
        if (deleting) {
          (void)(*s)->remove("invoices", fs.remove());
        } else {
          (void)(*s)->create(invoices(), fs.create(), fs.remove());
        }
      }
      ffs.crash();
      auto s = SuperStreams::open("/ss", &ffs);
      ASSERT_TRUE(s.ok()) << "step " << n << ": " << s.error().message;
      auto p = (*s)->partitions("invoices");
      if (p.ok()) {
        EXPECT_EQ(*p, invoices().partitions) << "step " << n;
      }
    }
  }
}

}  // namespace
}  // namespace strata::server
