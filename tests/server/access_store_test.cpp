// Where live user changes are kept (server/access_store.h): compare-and-set
// on the version, crash atomicity of the file, errors naming the place, and
// the etcd key two nodes share; AccessAdmin's edits over a concurrent change.
#include "server/access_store.h"

#include <gtest/gtest.h>

#include <fstream>

#include "common/fault_fs.h"
#include "etcd/etcd_client.h"
#include "server/access_admin.h"
#include "support/etcd_cluster.h"
#include "support/temp_dir.h"

namespace strata::server {
namespace {

auth::User user(const std::string& name) {
  return auth::User{name,
                    auth::hash_password(name, auth::HashAlgorithm::sha256, auth::Salt{3, 1, 4, 1}),
                    auth::HashAlgorithm::sha256,
                    {}};
}

auth::AccessOverlay with_user(const std::string& name) {
  auth::AccessOverlay o;
  auth::overlay_put_user(&o, user(name));
  return o;
}

// The contract both backends keep.
void check_compare_and_set(AccessStore& s) {
  auto empty = s.load();
  ASSERT_TRUE(empty.ok()) << empty.error().to_string();
  EXPECT_EQ(empty->version, 0);
  EXPECT_TRUE(empty->overlay.empty());
  auto v1 = s.save(with_user("a"), 0);
  ASSERT_TRUE(v1.ok()) << v1.error().to_string();
  ASSERT_TRUE(v1->has_value());
  // A writer that read before the first save loses, and writes nothing.
  auto stale = s.save(with_user("b"), 0);
  ASSERT_TRUE(stale.ok());
  EXPECT_FALSE(stale->has_value());
  auto now = s.load();
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->version, **v1);
  EXPECT_EQ(now->overlay, with_user("a"));
  auto v2 = s.save(with_user("c"), **v1);
  ASSERT_TRUE(v2.ok() && v2->has_value());
  EXPECT_GT(**v2, **v1);
  EXPECT_EQ(s.load()->overlay, with_user("c"));
}

TEST(AccessStore, FileCompareAndSet) {
  test::TempDir dir;
  auto s = file_access_store(posix_fs(), dir.path());
  check_compare_and_set(*s);
  EXPECT_EQ(s->where(), dir.path() + "/access/overlay.json");
}

TEST(AccessStore, AFileThatDoesNotReadIsAnErrorNamingIt) {
  test::TempDir dir;
  auto s = file_access_store(posix_fs(), dir.path());
  ASSERT_TRUE(s->save(with_user("a"), 0).ok());
  for (const std::string bad :
       {"{\"version\": 1", "[]", R"({"version": 1, "overlay": {"users": 3}})"}) {
    std::ofstream(s->where(), std::ios::trunc) << bad;
    auto l = s->load();
    ASSERT_FALSE(l.ok()) << bad;
    EXPECT_EQ(l.error().code, Errc::corrupt);
    EXPECT_NE(l.error().message.find(s->where()), std::string::npos) << l.error().message;
    // Nothing is written over what cannot be read.
    auto w = s->save(with_user("b"), 1);
    EXPECT_FALSE(w.ok());
  }
}

// A crash at every point of a save leaves the old overlay or the new one,
// never a file that does not read.
TEST(AccessStore, FileSaveIsCrashAtomic) {
  FaultFileSystem probe;
  {
    auto s = file_access_store(probe, "/d");
    ASSERT_TRUE(s->save(with_user("old"), 0).ok());
  }
  const uint64_t before = probe.mutation_count();
  {
    auto s = file_access_store(probe, "/d");
    ASSERT_TRUE(s->save(with_user("new"), 1).ok());
  }
  const uint64_t steps = probe.mutation_count() - before;
  ASSERT_GT(steps, 2u);
  for (uint64_t n = 0; n <= steps; ++n) {
    for (bool tear : {false, true}) {
      FaultFileSystem fs;
      auto s = file_access_store(fs, "/d");
      ASSERT_TRUE(s->save(with_user("old"), 0).ok());
      fs.crash_after(n);
      (void)s->save(with_user("new"), 1);
      fs.crash(CrashOptions{n, tear, tear, tear});
      auto after = file_access_store(fs, "/d")->load();
      ASSERT_TRUE(after.ok()) << "crash after " << n << ": " << after.error().to_string();
      EXPECT_TRUE(after->overlay == with_user("old") || after->overlay == with_user("new"))
          << "crash after " << n;
      if (n == steps) {
        EXPECT_EQ(after->overlay, with_user("new"));
      }
    }
  }
}

TEST(AccessStore, EtcdCompareAndSetAndTwoNodesSeeOneOverlay) {
  test::TempDir dir;
  std::string error;
  auto cluster = test::EtcdCluster::start(dir.path(), 1, &error);
  ASSERT_NE(cluster, nullptr) << error;
  etcd::ClientOptions o;
  o.endpoints = cluster->endpoints();
  auto c = etcd::EtcdClient::open(o);
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  std::shared_ptr<etcd::EtcdClient> client(std::move(c).value());
  auto s = etcd_access_store(client, "/t1");
  check_compare_and_set(*s);
  EXPECT_EQ(s->where(), "etcd key /t1/access/overlay");

  // Two admins (one per node) over one key: an edit that loses the
  // compare-and-set starts over from the other's overlay; both stay.
  auto b0 = auth::AccessControl::build({user("guest")}, {auth::VHost{"/", ""}}, {});
  ASSERT_TRUE(b0.ok());
  AccessPolicy pa(*b0), pb(*b0);
  int changes_b = 0;
  AccessAdmin a(&pa, etcd_access_store(client, "/t2"), *b0, nullptr);
  AccessAdmin b(&pb, etcd_access_store(client, "/t2"), *b0, [&] { changes_b += 1; });
  ASSERT_TRUE(a.start(std::chrono::milliseconds(0)).ok());
  ASSERT_TRUE(b.start(std::chrono::milliseconds(0)).ok());
  auto add = [](const std::string& name) {
    return [name](auth::AccessOverlay* o, const auth::AccessControl&) {
      auth::overlay_put_user(o, user(name));
      return Status::OK();
    };
  };
  ASSERT_TRUE(a.edit(add("alice")).ok());
  // b has not seen alice: its save fails, it reloads, and adds bob to it.
  ASSERT_TRUE(b.edit(add("bob")).ok());
  EXPECT_NE(pb.current()->find_user("alice"), nullptr);
  EXPECT_NE(pb.current()->find_user("bob"), nullptr);
  EXPECT_EQ(pa.current()->find_user("bob"), nullptr);
  ASSERT_TRUE(a.refresh().ok());
  EXPECT_NE(pa.current()->find_user("bob"), nullptr);
  EXPECT_GE(changes_b, 1);
  // A refusing edit stores nothing.
  auto no = a.edit([](auth::AccessOverlay*, const auth::AccessControl&) {
    return Status(Error(Errc::not_found, "no such user"));
  });
  EXPECT_EQ(no.error().code, Errc::not_found);
  // An edit that does not build (a bad regex) is refused before it is stored.
  const int64_t v = a.version();
  auto bad = a.edit([](auth::AccessOverlay* o, const auth::AccessControl&) {
    auth::overlay_set_permission(o, auth::UserPermission{"bob", "/", "(", "", ""});
    return Status::OK();
  });
  EXPECT_EQ(bad.error().code, Errc::invalid_argument);
  ASSERT_TRUE(a.refresh().ok());
  EXPECT_EQ(a.version(), v);
}

}  // namespace
}  // namespace strata::server
