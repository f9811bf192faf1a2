// SuperStreams: create (partitions through the callback), route by exact
// binding key, partitions in order, delete, persistence across reopen and
// crashes (FaultFileSystem), clear errors for bad names and keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "common/fault_fs.h"
#include "common/name_component.h"
#include "server/named_files.h"
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
  EXPECT_EQ(bad({"amq.s", {"a"}, {"k"}}).code(), Errc::invalid_argument);
  EXPECT_EQ(bad({"s", {}, {}}).code(), Errc::invalid_argument);
  EXPECT_EQ(bad({"s", {"a", "b"}, {"k"}}).code(), Errc::invalid_argument);
  EXPECT_EQ(bad({"s", {"a", "a"}, {"k", "l"}}).code(), Errc::invalid_argument);
  EXPECT_EQ(bad({"s", {"a", "b"}, {"k", "k"}}).code(), Errc::invalid_argument);
  EXPECT_EQ(bad({"s", {"a"}, {""}}).code(), Errc::invalid_argument);
  EXPECT_EQ(bad({"s", {"amq.a"}, {"k"}}).code(), Errc::invalid_argument);
  EXPECT_EQ(bad({"s", {"a\xff"}, {"k"}}).code(), Errc::invalid_argument);
  EXPECT_EQ(bad({"s", {"a"}, {std::string(256, 'k')}}).code(), Errc::invalid_argument);
  Status st = bad({"s", {"a", "b"}, {"k", "k"}});
  EXPECT_NE(st.error().message.find("binding key k is used twice"), std::string::npos)
      << st.error().message;
  EXPECT_TRUE(bad({"s", {"a"}, {std::string(255, 'k')}}).ok());
  // Names as RabbitMQ allows them.
  EXPECT_TRUE(bad({"s/x \xe2\x82\xac", {"..", "a/b"}, {"k", "l"}}).ok());
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

// A super stream named like a temporary file ("s.tmp") survives a reopen
// with its partitions (it was once removed as an interrupted create's
// leftover, its partitions orphaned), and creating super stream "s" does
// not write over its file (the create's temporary file had that name).
TEST(SuperStreams, OneNamedLikeATemporaryFileSurvivesAReopen) {
  test::TempDir dir;
  FakeStreams fs;
  const SuperStream tmp{"s.tmp", {"t-0", "t-1"}, {"a", "b"}};
  {
    auto s = SuperStreams::open(dir.sub("ss"));
    ASSERT_TRUE(s.ok()) << s.error().message;
    ASSERT_TRUE((*s)->create(tmp, fs.create(), fs.remove()).ok());
  }
  auto s = SuperStreams::open(dir.sub("ss"));
  ASSERT_TRUE(s.ok()) << s.error().message;
  auto p = (*s)->partitions("s.tmp");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(*p, tmp.partitions);
  EXPECT_EQ((*s)->create(tmp, fs.create(), fs.remove()).code(), Errc::already_exists);
}

TEST(SuperStreams, CreatingOneLeavesTheFileOfItsTmpNamesakeAlone) {
  test::TempDir dir;
  FakeStreams fs;
  const SuperStream tmp{"s.tmp", {"t-0", "t-1"}, {"a", "b"}};
  const SuperStream plain{"s", {"s-0"}, {"a"}};
  {
    auto s = SuperStreams::open(dir.sub("ss"));
    ASSERT_TRUE(s.ok()) << s.error().message;
    ASSERT_TRUE((*s)->create(tmp, fs.create(), fs.remove()).ok());
    ASSERT_TRUE((*s)->create(plain, fs.create(), fs.remove()).ok());
  }
  auto s = SuperStreams::open(dir.sub("ss"));
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ((*s)->names(), (std::vector<std::string>{"s", "s.tmp"}));
  auto p = (*s)->partitions("s.tmp");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(*p, tmp.partitions);
}

// A super stream file of the version before names were encoded (1; the
// same layout).
Bytes version1_file(const SuperStream& s) {
  Bytes b = encode_super_stream_file(s);
  b.resize(b.size() - 4);
  b[4] = 1;
  append_checksum_trailer(&b);
  return b;
}

// Upgrade: version 1 files are read; what the previous version left under
// its temporary name (a version 1 "s.tmp" holding super stream "s", or a
// file cut short) is removed, but a version 1 "s.tmp" holding super stream
// "s.tmp" is that super stream; anything else that is not a component of
// a name is left alone.
TEST(SuperStreams, FilesOfThePreviousVersionAndLeftoversAreToldApart) {
  test::TempDir dir;
  const std::string ss = dir.sub("ss");
  ASSERT_TRUE(create_dirs(posix_fs(), ss).ok());
  const SuperStream old{"old", {"old-0"}, {"a"}};
  const SuperStream tmp{"t.tmp", {"t-0"}, {"a"}};
  auto put = [&](const std::string& file, BytesView bytes) {
    ASSERT_TRUE(write_file_atomic(posix_fs(), ss + "/" + file, bytes).ok());
  };
  put("old", version1_file(old));
  put("old.tmp", version1_file(old));  // an interrupted rewrite of "old"
  put("gone.tmp", version1_file({"gone", {"g-0"}, {"a"}}));
  put("cut.tmp", "SSUP");
  put("t.tmp", version1_file(tmp));
  put("new%tmp", "half");
  put("not ours", "x");  // no name's component: a space is always escaped
  auto s = SuperStreams::open(ss);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ((*s)->names(), (std::vector<std::string>{"old", "t.tmp"}));
  EXPECT_EQ(*(*s)->partitions("t.tmp"), tmp.partitions);
  auto left = posix_fs().list_dir(ss);
  ASSERT_TRUE(left.ok());
  EXPECT_EQ(*left, (std::vector<std::string>{"not ours", "old", "t.tmp"}));
  // A damaged current file fails the open whatever its name.
  Bytes bad = encode_super_stream_file({"u.tmp", {"u-0"}, {"a"}});
  bad[8] ^= 1;
  put("u.tmp", bad);
  auto again = SuperStreams::open(ss);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, Errc::corrupt);
}

// The previous version named a file by the name as is: a super stream
// whose name starts with '.' or passes 200 bytes (which is not its own
// component) is read and its file renamed to the component, so that a
// later delete finds it.
TEST(SuperStreams, FilesOfThePreviousVersionUnderTheirNameAsIsAreRenamed) {
  test::TempDir dir;
  const std::string ss = dir.sub("ss");
  ASSERT_TRUE(create_dirs(posix_fs(), ss).ok());
  const SuperStream hidden{".hidden", {"h-0"}, {"a"}};
  const SuperStream longer{std::string(240, 'l'), {"l-0"}, {"a"}};
  for (const auto& x : {hidden, longer}) {
    ASSERT_TRUE(write_file_atomic(posix_fs(), ss + "/" + x.name, version1_file(x)).ok());
  }
  ASSERT_TRUE(write_file_atomic(posix_fs(), ss + "/.hidden.tmp", version1_file(hidden)).ok());
  {
    auto s = SuperStreams::open(ss);
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_EQ(*(*s)->partitions(".hidden"), hidden.partitions);
    EXPECT_EQ(*(*s)->partitions(longer.name), longer.partitions);
  }
  auto left = posix_fs().list_dir(ss);
  ASSERT_TRUE(left.ok());
  std::vector<std::string> want = {name_component(".hidden"), name_component(longer.name)};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(*left, want);
  FakeStreams fs;
  fs.streams = {"h-0", "l-0"};
  auto s = SuperStreams::open(ss);
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_TRUE((*s)->remove(".hidden", fs.remove()).ok());
  ASSERT_TRUE((*s)->remove(longer.name, fs.remove()).ok());
  EXPECT_TRUE(posix_fs().list_dir(ss)->empty());
}

// Names with '/', "..", non-ASCII and 255 bytes (hashed: the file holds
// the name) all come back.
TEST(SuperStreams, EveryNameSurvivesAReopen) {
  test::TempDir dir;
  FakeStreams fs;
  const std::vector<SuperStream> all = {
      {"a/b", {"a/b-0"}, {"k"}},
      {"..", {"..-0"}, {"k"}},
      {"orders 2026/Q1 \xe2\x82\xac", {"o-0"}, {"k"}},
      {std::string(255, 's'), {"long-0"}, {"k"}},
      {std::string(254, 's') + "t", {"long-1"}, {"k"}},
  };
  {
    auto s = SuperStreams::open(dir.sub("ss"));
    ASSERT_TRUE(s.ok());
    for (const auto& x : all) ASSERT_TRUE((*s)->create(x, fs.create(), fs.remove()).ok());
  }
  auto s = SuperStreams::open(dir.sub("ss"));
  ASSERT_TRUE(s.ok()) << s.error().message;
  for (const auto& x : all) EXPECT_EQ(*(*s)->partitions(x.name), x.partitions);
  ASSERT_TRUE((*s)->remove("a/b", fs.remove()).ok());
  EXPECT_EQ((*s)->names().size(), all.size() - 1);
}

// What another node stored (a cluster's watch) changes what this one
// answers; a whole set read at once replaces it; a key's value must hold
// the super stream the key names.
TEST(SuperStreams, LearnsWhatOtherNodesStore) {
  test::TempDir dir;
  auto s = SuperStreams::open(dir.sub("ss"));
  ASSERT_TRUE(s.ok());
  (*s)->learned("invoices", invoices());
  EXPECT_EQ(*(*s)->route("invoices", "1"), std::vector<std::string>{"invoices-1"});
  EXPECT_EQ((*s)->super_stream_of("invoices-2"), "invoices");
  (*s)->learned("invoices", std::nullopt);
  EXPECT_EQ((*s)->partitions("invoices").code(), Errc::not_found);
  (*s)->learned("invoices", invoices());
  (*s)->learned_all({SuperStream{"eu", {"eu-a"}, {"a"}}});
  EXPECT_EQ((*s)->names(), std::vector<std::string>{"eu"});

  const Bytes value = encode_super_stream_file(invoices());
  auto ok = decode_super_stream_key("invoices", value, "etcd key x/super_streams/invoices");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(*ok, invoices());
  auto wrong = decode_super_stream_key("orders", value, "etcd key x/super_streams/orders");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().code, Errc::corrupt);
  EXPECT_NE(wrong.error().message.find("etcd key x/super_streams/orders"), std::string::npos)
      << wrong.error().message;
  Bytes torn = value;
  torn[6] ^= 1;
  EXPECT_EQ(decode_super_stream_key("invoices", torn, "k").code(), Errc::corrupt);
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
