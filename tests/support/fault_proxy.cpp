#include "support/fault_proxy.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/s3rver.h"

namespace strata::test {

std::unique_ptr<FaultProxy> FaultProxy::start(const std::string& dir, int upstream_port,
                                              const nlohmann::json& rules, bool record,
                                              std::string* error) {
  const std::string script = tools_path("fault_proxy.js");
  if (!std::filesystem::exists(script)) {
    *error = script + " is missing";
    return nullptr;
  }
  if (!have_program("node")) {
    *error = "node is not on PATH: run scripts/setup.sh";
    return nullptr;
  }
  std::unique_ptr<FaultProxy> p(new FaultProxy());
  std::string rules_path = dir + "/fault_rules.json";
  {
    std::ofstream out(rules_path);
    out << (rules.is_null() ? nlohmann::json::array() : rules).dump();
  }
  std::vector<std::string> argv = {"node",       script,
                                   "--upstream", "127.0.0.1:" + std::to_string(upstream_port),
                                   "--rules",    rules_path};
  if (record) {
    p->record_path_ = dir + "/requests.jsonl";
    std::filesystem::remove(p->record_path_);
    argv.push_back("--record");
    argv.push_back(p->record_path_);
  }
  p->proc_ = Process::spawn(argv, dir);
  auto out = p->proc_.wait_for_output("listening on", std::chrono::seconds(20));
  if (!out) {
    *error = "fault_proxy did not start: " + p->logs();
    return nullptr;
  }
  p->port_ = parse_listening_port(*out);
  if (p->port_ == 0) {
    *error = "fault_proxy printed no port: " + *out;
    return nullptr;
  }
  return p;
}

FaultProxy::~FaultProxy() {
  proc_.kill();
  proc_.wait(std::chrono::seconds(10));
}

std::vector<nlohmann::json> FaultProxy::recorded() const {
  std::vector<nlohmann::json> out;
  if (record_path_.empty()) return out;
  std::ifstream in(record_path_);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

std::unique_ptr<Haproxy> Haproxy::start(const std::string& dir, const std::string& config,
                                        std::string* error) {
  if (!have_program("haproxy")) {
    *error = "haproxy is not installed: run scripts/setup.sh";
    return nullptr;
  }
  std::unique_ptr<Haproxy> h(new Haproxy());
  // free_port() races with other processes binding ports; retry a few times.
  for (int attempt = 0; attempt < 5; ++attempt) {
    h->port_ = free_port();
    std::string text = config;
    for (auto [needle, value] :
         {std::pair<std::string, std::string>{"@PORT@", std::to_string(h->port_)},
          {"@DIR@", dir}}) {
      for (size_t pos; (pos = text.find(needle)) != std::string::npos;)
        text.replace(pos, needle.size(), value);
    }
    std::string cfg = dir + "/haproxy.cfg";
    {
      std::ofstream out(cfg);
      out << text;
    }
    // -db: stay in the foreground; -W is not needed (no reloads).
    h->proc_ = Process::spawn({"haproxy", "-db", "-f", cfg}, dir);
    if (wait_for_port(h->port_, std::chrono::seconds(10)) && h->proc_.running()) return h;
    h->proc_.kill();
    h->proc_.wait(std::chrono::seconds(5));
  }
  *error = "haproxy did not start: " + h->logs();
  return nullptr;
}

Haproxy::~Haproxy() {
  proc_.kill();
  proc_.wait(std::chrono::seconds(10));
}

}  // namespace strata::test
