#include "etcd_contract_backend.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <mutex>

#include "support/temp_dir.h"

namespace strata::test {

namespace {

// Owns the cluster for the whole binary: gtest tears environments down
// before exit, so the members are killed even when tests fail.
class SharedCluster : public ::testing::Environment {
 public:
  EtcdCluster* get() {
    std::lock_guard l(mu_);
    if (!cluster_ && error_.empty()) {
      dir_ = std::make_unique<TempDir>();
      cluster_ = EtcdCluster::start(dir_->path(), 3, &error_);
    }
    EXPECT_NE(cluster_, nullptr) << error_;
    return cluster_.get();
  }
  void TearDown() override {
    cluster_.reset();
    dir_.reset();
  }

 private:
  std::mutex mu_;
  std::unique_ptr<TempDir> dir_;
  std::unique_ptr<EtcdCluster> cluster_;
  std::string error_;
};

SharedCluster* env() {
  static SharedCluster* e =
      static_cast<SharedCluster*>(::testing::AddGlobalTestEnvironment(new SharedCluster()));
  return e;
}

// Registered before main runs the tests.
[[maybe_unused]] SharedCluster* const kRegistered = env();

}  // namespace

EtcdCluster* shared_etcd_cluster() {
  return env()->get();
}

std::shared_ptr<etcd::EtcdClient> shared_etcd_client(std::chrono::milliseconds request,
                                                     std::chrono::milliseconds attempt) {
  EtcdCluster* c = shared_etcd_cluster();
  if (!c) return nullptr;
  etcd::ClientOptions o;
  o.endpoints = c->endpoints();
  o.request_timeout = request;
  o.attempt_timeout = attempt;
  auto client = etcd::EtcdClient::open(o);
  EXPECT_TRUE(client.ok()) << client.error().to_string();
  return client.ok() ? std::shared_ptr<etcd::EtcdClient>(std::move(client).value()) : nullptr;
}

std::string fresh_namespace() {
  static std::atomic<int> n{0};
  return "test/" + std::to_string(::getpid()) + "-" + std::to_string(n.fetch_add(1));
}

std::unique_ptr<catalog::Catalog> open_etcd_contract_catalog() {
  auto client = shared_etcd_client();
  if (!client) return nullptr;
  auto c = catalog::EtcdCatalog::open(client, {fresh_namespace()});
  EXPECT_TRUE(c.ok()) << c.error().to_string();
  return c.ok() ? std::move(c).value() : nullptr;
}

}  // namespace strata::test
