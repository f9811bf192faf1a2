#include "support/etcd_cluster.h"

#include <fmt/format.h>
#include <signal.h>

#include <filesystem>
#include <set>
#include <thread>

#include "support/http_get.h"

namespace strata::test {

std::unique_ptr<EtcdCluster> EtcdCluster::start(const std::string& dir, int members,
                                                std::string* error, std::optional<EtcdTls> tls,
                                                std::vector<std::string> extra_flags) {
  if (!have_program("etcd")) {
    *error = "etcd is not on PATH: run scripts/setup.sh (Debian package etcd-server)";
    return nullptr;
  }
  // A port free when picked may be taken by another test running in
  // parallel before etcd binds it: such a start is retried with new ports.
  constexpr int kAttempts = 5;
  for (int attempt = 0;; ++attempt) {
    std::unique_ptr<EtcdCluster> c(new EtcdCluster());
    c->tls_ = tls;
    c->extra_flags_ = extra_flags;
    std::set<int> used;
    auto fresh_port = [&] {
      int p = free_port();
      while (!used.insert(p).second) p = free_port();
      return p;
    };
    for (int i = 0; i < members; ++i) {
      Member m;
      // fmt, not "m" + std::to_string(i): GCC 12 at -O3 reports a false
      // -Wrestrict inside that operator+ (Release builds use -Werror).
      m.name = fmt::format("m{}", i);
      m.data_dir = attempt == 0 ? fmt::format("{}/etcd-{}", dir, i)
                                : fmt::format("{}/etcd-{}-retry{}", dir, i, attempt);
      m.log_dir = m.data_dir + "-logs";
      std::filesystem::create_directories(m.log_dir);
      m.client_port = fresh_port();
      m.peer_port = fresh_port();
      if (tls) m.metrics_port = fresh_port();
      if (!c->initial_cluster_.empty()) c->initial_cluster_ += ",";
      c->initial_cluster_ += m.name + "=http://127.0.0.1:" + std::to_string(m.peer_port);
      c->members_.push_back(std::move(m));
    }
    for (auto& m : c->members_) m.proc = c->spawn(m);
    bool healthy = true;
    for (int i = 0; i < members && healthy; ++i) {
      if (c->wait_healthy(i, std::chrono::seconds(20))) continue;
      healthy = false;
      const std::string logs = c->logs(i);
      if (logs.find("address already in use") != std::string::npos && attempt + 1 < kAttempts) {
        break;
      }
      *error = "etcd member " + std::to_string(i) + " did not become healthy within 20 s: " + logs;
      return nullptr;
    }
    if (healthy) return c;
  }
}

Process EtcdCluster::spawn(const Member& m) const {
  const std::string client =
      (tls_ ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(m.client_port);
  const std::string peer = "http://127.0.0.1:" + std::to_string(m.peer_port);
  std::vector<std::string> tls_args;
  if (tls_) {
    tls_args = {"--cert-file",
                tls_->cert_file,
                "--key-file",
                tls_->key_file,
                "--listen-metrics-urls",
                "http://127.0.0.1:" + std::to_string(m.metrics_port)};
    if (!tls_->client_ca_file.empty()) {
      tls_args.insert(tls_args.end(),
                      {"--client-cert-auth", "--trusted-ca-file", tls_->client_ca_file});
    }
  }
  std::vector<std::string> argv = {"etcd",
                                   "--name",
                                   m.name,
                                   "--data-dir",
                                   m.data_dir,
                                   "--listen-client-urls",
                                   client,
                                   "--advertise-client-urls",
                                   client,
                                   "--listen-peer-urls",
                                   peer,
                                   "--initial-advertise-peer-urls",
                                   peer,
                                   "--initial-cluster",
                                   initial_cluster_,
                                   "--initial-cluster-state",
                                   "new",
                                   "--initial-cluster-token",
                                   "strata-test",
                                   "--heartbeat-interval",
                                   "50",
                                   "--election-timeout",
                                   "500",
                                   "--logger=zap",
                                   "--log-level",
                                   "warn"};
  argv.insert(argv.end(), tls_args.begin(), tls_args.end());
  argv.insert(argv.end(), extra_flags_.begin(), extra_flags_.end());
  return Process::spawn(argv, m.log_dir);
}

EtcdCluster::~EtcdCluster() {
  for (auto& m : members_) {
    // SIGKILL ends a frozen (SIGSTOPped) member too.
    m.proc.kill(SIGKILL);
    m.proc.wait(std::chrono::seconds(10));
  }
}

std::vector<std::string> EtcdCluster::endpoints() const {
  std::vector<std::string> out;
  for (int i = 0; i < size(); ++i) out.push_back(endpoint(i));
  return out;
}

std::string EtcdCluster::endpoint(int i) const {
  return (tls_ ? "https://127.0.0.1:" : "http://127.0.0.1:") +
         std::to_string(members_[size_t(i)].client_port);
}

void EtcdCluster::kill(int i) {
  auto& p = members_[size_t(i)].proc;
  p.kill(SIGKILL);
  p.wait(std::chrono::seconds(10));
}

void EtcdCluster::freeze(int i) {
  members_[size_t(i)].proc.freeze();
}
void EtcdCluster::thaw(int i) {
  members_[size_t(i)].proc.kill(SIGCONT);
}
bool EtcdCluster::running(int i) {
  return members_[size_t(i)].proc.running();
}

void EtcdCluster::relaunch(int i) {
  auto& m = members_[size_t(i)];
  m.proc = spawn(m);
}

bool EtcdCluster::restart(int i, std::string* error) {
  relaunch(i);
  if (!wait_healthy(i, std::chrono::seconds(20))) {
    *error =
        "etcd member " + std::to_string(i) + " did not become healthy after a restart: " + logs(i);
    return false;
  }
  return true;
}

bool EtcdCluster::wait_healthy(int i, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // Over TLS the client URL wants a client certificate: health is read on
  // the plain metrics URL instead.
  const std::string url =
      tls_ ? "http://127.0.0.1:" + std::to_string(members_[size_t(i)].metrics_port) + "/health"
           : endpoint(i) + "/health";
  while (std::chrono::steady_clock::now() < deadline) {
    if (!members_[size_t(i)].proc.running()) return false;
    if (http_get(url, std::chrono::milliseconds(1000)).find("\"true\"") != std::string::npos)
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

int EtcdCluster::leader() {
  for (int i = 0; i < size(); ++i) {
    if (!running(i)) continue;
    const auto& m = members_[size_t(i)];
    const std::string url = tls_ ? "http://127.0.0.1:" + std::to_string(m.metrics_port) + "/metrics"
                                 : endpoint(i) + "/metrics";
    if (http_get(url, std::chrono::milliseconds(1000)).find("\netcd_server_is_leader 1") !=
        std::string::npos) {
      return i;
    }
  }
  return -1;
}

std::string EtcdCluster::logs(int i) const {
  const auto& p = members_[size_t(i)].proc;
  std::string err = p.stderr_text();
  if (err.size() > 4000) err = "..." + err.substr(err.size() - 4000);
  return err;
}

}  // namespace strata::test
