// `strata catalog ls` and `strata catalog show`, run as the real binary on
// a catalog this test writes, as tables and as JSON, beside a running
// writer, and their errors.
#include "support/cli.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "catalog/embedded_catalog.h"
#include "support/assertions.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace strata::catalog {
namespace {

using strata::test::strata_cli;

class CatalogCli : public ::testing::Test {
 protected:
  // Two streams, one persisted, one created only; the writer stays open.
  void SetUp() override {
    EmbeddedCatalogOptions o;
    o.capacity = 100;
    o.wal_bytes = 64 * 1024;
    auto c = EmbeddedCatalog::open(posix_fs(), dir_.path(), o);
    ASSERT_TRUE(c.ok()) << c.error().to_string();
    writer_ = std::move(c).value();
    auto e = writer_->create("orders", 3);
    ASSERT_OK(e);
    auto r = writer_->put("orders", kRoot, 3, e->revision);
    ASSERT_OK(r);
    orders_revision_ = r->revision;
    ASSERT_OK(writer_->create("audit-log", 1));
  }

  static constexpr const char* kRoot = "strata/1a2b3c4d/orders/meta/root.3.deadbeef";
  strata::test::TempDir dir_;
  std::unique_ptr<EmbeddedCatalog> writer_;
  uint64_t orders_revision_ = 0;
};

TEST_F(CatalogCli, LsPrintsEveryStreamBesideARunningWriter) {
  strata::test::CliOut o = strata_cli({"catalog", "ls", dir_.path()});
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.out.find("catalog   embedded:" + dir_.path() + "/catalog.slots"), std::string::npos)
      << o.out;
  // The writer's file holds 64 streams until it grows (up to its 100).
  EXPECT_NE(o.out.find("streams   2 of 64 the file holds now"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("ROOT_KEY"), std::string::npos);
  // Name order: audit-log first, without a root.
  const size_t audit = o.out.find("audit-log");
  const size_t orders = o.out.find("orders  ");
  ASSERT_NE(audit, std::string::npos);
  ASSERT_NE(orders, std::string::npos);
  EXPECT_LT(audit, orders);
  EXPECT_NE(o.out.find(kRoot), std::string::npos);
  EXPECT_EQ(o.err, "");
}

TEST_F(CatalogCli, LsJsonHasCapacityAndEveryEntry) {
  for (const auto& args : {std::vector<std::string>{"--json", "catalog", "ls", dir_.path()},
                           std::vector<std::string>{"catalog", "ls", dir_.path(), "--json"}}) {
    strata::test::CliOut o = strata_cli(args);
    ASSERT_EQ(o.status, 0) << o.err;
    auto doc = nlohmann::json::parse(o.out);
    EXPECT_EQ(doc["capacity"], 64);
    EXPECT_EQ(doc["streams_used"], 2);
    EXPECT_EQ(doc["catalog"], "embedded:" + dir_.path() + "/catalog.slots");
    ASSERT_EQ(doc["streams"].size(), 2u);
    EXPECT_EQ(doc["streams"][0]["stream"], "audit-log");
    EXPECT_TRUE(doc["streams"][0]["root_key"].is_null());
    EXPECT_EQ(doc["streams"][1]["stream"], "orders");
    EXPECT_EQ(doc["streams"][1]["epoch"], 3);
    EXPECT_EQ(doc["streams"][1]["revision"], orders_revision_);
    EXPECT_EQ(doc["streams"][1]["root_key"], kRoot);
  }
}

TEST_F(CatalogCli, ShowPrintsOneStream) {
  strata::test::CliOut o = strata_cli({"catalog", "show", dir_.path(), "orders"});
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.out.find("epoch     3\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("revision  " + std::to_string(orders_revision_) + "\n"), std::string::npos);
  EXPECT_NE(o.out.find(std::string("root_key  ") + kRoot), std::string::npos);

  strata::test::CliOut j = strata_cli({"--json", "catalog", "show", dir_.path(), "audit-log"});
  ASSERT_EQ(j.status, 0) << j.err;
  auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["stream"], "audit-log");
  EXPECT_EQ(doc["epoch"], 1);
  EXPECT_TRUE(doc["root_key"].is_null());
}

TEST_F(CatalogCli, ShowOfAMissingOrBadStreamFailsNamingIt) {
  strata::test::CliOut o = strata_cli({"catalog", "show", dir_.path(), "nope"});
  EXPECT_EQ(o.status, 1);
  EXPECT_NE(o.err.find("not_found"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("\"nope\""), std::string::npos) << o.err;

  strata::test::CliOut j = strata_cli({"--json", "catalog", "show", dir_.path(), "amq.bad"});
  EXPECT_EQ(j.status, 1);
  auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["error"]["code"], "invalid_argument");
  EXPECT_NE(doc["error"]["message"].get<std::string>().find("amq.bad"), std::string::npos);
}

TEST_F(CatalogCli, ADirectoryWithoutACatalogIsNotFoundAndIsLeftEmpty) {
  strata::test::TempDir empty;
  strata::test::CliOut o = strata_cli({"catalog", "ls", empty.sub("node")});
  EXPECT_EQ(o.status, 1);
  EXPECT_NE(o.err.find(empty.sub("node") + "/catalog.slots: no such file"), std::string::npos)
      << o.err;
  EXPECT_FALSE(exists(posix_fs(), empty.sub("node")));
}

TEST_F(CatalogCli, TheCliNeverWritesTheFile) {
  writer_.reset();
  auto before = read_file(posix_fs(), dir_.sub("catalog.slots"));
  ASSERT_OK(before);
  ASSERT_EQ(strata_cli({"catalog", "ls", dir_.path()}).status, 0);
  ASSERT_EQ(strata_cli({"catalog", "show", dir_.path(), "orders"}).status, 0);
  auto after = read_file(posix_fs(), dir_.sub("catalog.slots"));
  ASSERT_OK(after);
  EXPECT_TRUE(*before == *after);
}

}  // namespace
}  // namespace strata::catalog
