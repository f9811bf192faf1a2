#include "support/serve_cluster.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>

namespace strata::test {

using json = nlohmann::json;
using namespace proto;

std::unique_ptr<ServeCluster> ServeCluster::start(const std::string& dir,
                                                  const ServeClusterOptions& options,
                                                  std::string* error) {
  std::unique_ptr<ServeCluster> c(new ServeCluster());
  c->dir_ = dir;
  c->options_ = options;
  c->etcd_ = EtcdCluster::start(dir, options.etcd_members, error);
  if (!c->etcd_) return nullptr;
  std::filesystem::create_directories(dir + "/bucket");
  std::filesystem::create_directories(dir + "/logs");
  c->nodes_.resize(size_t(options.nodes));
  c->states_.resize(size_t(options.nodes), State::down);
  for (int i = 0; i < options.nodes; ++i) {
    std::ofstream(c->config_path(i)) << c->node_doc(i, true).dump(2);
    if (!c->spawn_node(i, error)) return nullptr;
  }
  return c;
}

ServeCluster::~ServeCluster() {
  for (int i = 0; i < size(); ++i) {
    if (port(i) > 0 && running(i)) stop(i);
  }
}

bool ServeCluster::spawn_node(int i, std::string* error) {
  auto& n = nodes_[size_t(i)];
  // Each start of a node logs to its own directory: a restarted node's
  // output does not overwrite the dead one's.
  std::string log_dir = dir_ + "/logs/node-" + std::to_string(i);
  for (int k = 1; std::filesystem::exists(log_dir); ++k) {
    log_dir = dir_ + "/logs/node-" + std::to_string(i) + "." + std::to_string(k);
  }
  std::filesystem::create_directories(log_dir);
  ServeProcess started = ServeProcess::start(data_dir(i), {"--config", config_path(i)}, log_dir);
  {
    std::lock_guard lock(mu_);
    n = std::move(started);
    states_[size_t(i)] = n.port() > 0 ? State::up : State::down;
  }
  if (n.port() > 0) return true;
  *error = "node " + std::to_string(i) + " did not listen: " + n.process().stderr_text();
  return false;
}

int ServeCluster::port(int i) const {
  std::lock_guard lock(mu_);
  return nodes_[size_t(i)].port();
}

bool ServeCluster::running(int i) {
  return nodes_[size_t(i)].process().running();
}

void ServeCluster::set_state(int i, State s) {
  std::lock_guard lock(mu_);
  states_[size_t(i)] = s;
}

ServeCluster::State ServeCluster::state(int i) const {
  std::lock_guard lock(mu_);
  return states_[size_t(i)];
}

void ServeCluster::kill(int i) {
  set_state(i, State::down);
  auto& p = nodes_[size_t(i)].process();
  p.kill(SIGKILL);
  p.wait(std::chrono::seconds(10));
}

void ServeCluster::freeze(int i) {
  set_state(i, State::frozen);
  nodes_[size_t(i)].process().freeze();
}

void ServeCluster::thaw(int i) {
  nodes_[size_t(i)].process().kill(SIGCONT);
  set_state(i, State::up);
}

std::optional<int> ServeCluster::stop(int i, std::chrono::milliseconds timeout) {
  auto& n = nodes_[size_t(i)];
  set_state(i, State::down);
  n.process().kill(SIGCONT);
  auto st = n.stop(timeout);
  if (!st) {
    // A stop that hangs is a bug: keep every thread's stack for the
    // failure message (logs(i)), then kill it.
    if (have_program("gdb")) {
      hang_stacks_ = run({"gdb", "-batch", "-ex", "thread apply all bt", "-p",
                          std::to_string(n.process().pid())},
                         {}, std::chrono::seconds(60))
                         .output;
    }
    n.process().kill(SIGKILL);
    n.process().wait(std::chrono::seconds(10));
  }
  return st;
}

bool ServeCluster::restart(int i, std::string* error) {
  if (running(i)) {
    *error = "node " + std::to_string(i) + " is still running";
    return false;
  }
  return spawn_node(i, error);
}

std::string ServeCluster::logs(int i) {
  std::string err = nodes_[size_t(i)].process().stderr_text();
  if (err.size() > 4000) err = "..." + err.substr(err.size() - 4000);
  if (!hang_stacks_.empty())
    err += "\n--- stacks of the last node whose stop hung:\n" + hang_stacks_;
  return err;
}

void ServeCluster::kill_all_etcd() {
  for (int m = 0; m < etcd_->size(); ++m) etcd_->kill(m);
}

bool ServeCluster::restart_all_etcd(std::string* error) {
  kill_all_etcd();
  return start_all_etcd(error);
}

bool ServeCluster::start_all_etcd(std::string* error) {
  // None becomes healthy before a quorum runs: start all, then wait.
  for (int m = 0; m < etcd_->size(); ++m) etcd_->relaunch(m);
  for (int m = 0; m < etcd_->size(); ++m) {
    if (!etcd_->wait_healthy(m, std::chrono::seconds(30))) {
      *error = "etcd member " + std::to_string(m) +
               " did not become healthy after restarting all: " + etcd_->logs(m);
      return false;
    }
  }
  return true;
}

std::string ServeCluster::data_dir(int i) const {
  return dir_ + "/data-" + std::to_string(i);
}

std::string ServeCluster::config_path(int i) const {
  return dir_ + "/node-" + std::to_string(i) + ".json";
}

json ServeCluster::node_doc(int i, bool serve) const {
  json doc = {{"objstore", {{"backend", "fs"}, {"fs", {{"root", dir_ + "/bucket"}}}}},
              {"catalog",
               {{"backend", "etcd"},
                {"endpoints", etcd_->endpoints()},
                {"namespace", "sc"},
                {"request_timeout_ms", 1500},
                {"attempt_timeout_ms", 500}}},
              {"tiering",
               {{"confirm", "remote"},
                {"remote_confirm_cut_ms", 20},
                {"remote_confirm_timeout_ms", 20000},
                {"request_timeout_ms", 2000}}}};
  if (serve) {
    doc["cluster"] = {{"enabled", true},
                      {"node_id", "n" + std::to_string(i)},
                      {"lease_ttl_ms", options_.lease_ttl_ms}};
  }
  doc.merge_patch(options_.patch);
  if (!serve) doc.erase("cluster");
  return doc;
}

std::string ServeCluster::offline_config(const std::string& name) const {
  std::string path = dir_ + "/" + name;
  std::ofstream(path) << node_doc(0, false).dump(2);
  return path;
}

Result<StreamClient> ServeCluster::client(int i) {
  if (state(i) != State::up) {
    return Error(Errc::unavailable, "node " + std::to_string(i) + " is not up");
  }
  auto c = StreamClient::connect(port(i));
  if (!c.ok()) return std::move(c).error();
  STRATA_TRY(c->handshake());
  return std::move(*c);
}

Status ServeCluster::create_stream(int i, const std::string& stream) {
  auto c = client(i);
  if (!c.ok()) return std::move(c).error();
  const std::string confirm = node_doc(i, true)["tiering"]["confirm"];
  STRATA_TRY(c->send(CreateStreamRequest{c->corr(), stream, {{"x-strata-confirm", confirm}}}));
  auto r = c->expect<CreateStreamResponse>(std::chrono::seconds(60));
  if (!r.ok()) return std::move(r).error();
  if (r->code != ResponseCode::ok) {
    return Error(Errc::invalid_argument,
                 "create " + stream + ": response code " + std::to_string(int(r->code)));
  }
  return Status::OK();
}

int ServeCluster::leader_port(int i, const std::string& stream) {
  auto c = client(i);
  if (!c.ok()) return 0;
  if (!c->send(MetadataRequest{c->corr(), {stream}}).ok()) return 0;
  auto r = c->expect<MetadataResponse>(std::chrono::seconds(5));
  if (!r.ok() || r->streams.size() != 1 || r->streams[0].code != ResponseCode::ok) return 0;
  for (const auto& b : r->brokers) {
    if (b.reference == r->streams[0].leader_reference) {
      EXPECT_EQ(b.host, "127.0.0.1");
      return int(b.port);
    }
  }
  ADD_FAILURE() << "leader reference without a broker";
  return 0;
}

int ServeCluster::index_of_port(int p) const {
  for (int i = 0; i < size(); ++i) {
    if (p > 0 && port(i) == p) return i;
  }
  return -1;
}

int ServeCluster::leader(int ask, const std::string& stream) {
  return index_of_port(leader_port(ask, stream));
}

int ServeCluster::await_leader(int ask, int old, const std::string& stream,
                               std::chrono::milliseconds timeout) {
  int found = -1;
  eventually(timeout, [&] {
    found = leader(ask, stream);
    return found >= 0 && found != old;
  });
  return found != old ? found : -1;
}

int ServeCluster::await_agreed_leader(const std::string& stream,
                                      std::chrono::milliseconds timeout) {
  int found = -1;
  bool agreed = eventually(timeout, [&] {
    found = -1;
    for (int i = 0; i < size(); ++i) {
      if (!running(i)) continue;
      int l = leader(i, stream);
      if (l < 0 || (found >= 0 && l != found)) return false;
      found = l;
    }
    return found >= 0;
  });
  return agreed ? found : -1;
}

}  // namespace strata::test
