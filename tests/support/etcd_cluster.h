// A real etcd cluster for tests: N members of Debian's etcd on 127.0.0.1,
// free client and peer ports, data directories under a test's directory,
// short heartbeat and election timeouts (a killed leader is replaced in
// about a second). Members can be killed (-9), frozen (SIGSTOP), thawed and
// restarted on their data; all are killed when the cluster is destroyed.
//
// Tests do not skip when etcd is missing (scripts/setup.sh installs it):
// start() returns nullptr with a message and the caller fails the test.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/process.h"

namespace strata::test {

// TLS on the members' client URLs (https): their certificate and key, and
// with client_ca_file set, client certificates verified against it
// (--client-cert-auth). Health is then read on a plain metrics URL.
struct EtcdTls {
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;
};

class EtcdCluster {
 public:
  // `dir` must exist; members get <dir>/etcd-<i>.
  // `extra_flags` go to every member's command line (--auth-token-ttl 1).
  static std::unique_ptr<EtcdCluster> start(const std::string& dir, int members, std::string* error,
                                            std::optional<EtcdTls> tls = std::nullopt,
                                            std::vector<std::string> extra_flags = {});
  ~EtcdCluster();

  int size() const { return int(members_.size()); }
  // http(s)://127.0.0.1:<client port> of every member, in member order.
  std::vector<std::string> endpoints() const;
  std::string endpoint(int i) const;

  void kill(int i);    // SIGKILL and reap
  void freeze(int i);  // SIGSTOP; returns once every thread of it is stopped
  void thaw(int i);    // SIGCONT
  // Starts a killed member again on its data; false (with *error) if it
  // does not become healthy within 20 s.
  bool restart(int i, std::string* error);
  // Starts a killed member again without waiting (restarting every member:
  // none is healthy before a quorum runs); then wait_healthy.
  void relaunch(int i);
  bool running(int i);
  // Waits until member i answers /health with "true" (the cluster has a
  // leader and the member reaches it).
  bool wait_healthy(int i, std::chrono::milliseconds timeout);
  std::string logs(int i) const;
  // The member that is raft leader now (its metrics say
  // etcd_server_is_leader 1); -1 when no running member says so.
  int leader();

 private:
  struct Member {
    std::string name, data_dir, log_dir;
    int client_port = 0, peer_port = 0, metrics_port = 0;
    Process proc;
  };
  EtcdCluster() = default;
  Process spawn(const Member& m) const;

  std::vector<Member> members_;
  std::string initial_cluster_;
  std::optional<EtcdTls> tls_;
  std::vector<std::string> extra_flags_;
};

}  // namespace strata::test
