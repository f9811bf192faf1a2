#include "support/s3rver.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <thread>

namespace strata::test {

std::string tools_path(const std::string& rel) {
  return std::string(STRATA_TOOLS_DIR) + "/" + rel;
}

bool wait_for_port(int port, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    if (ok) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

int parse_listening_port(const std::string& output) {
  static const std::regex re("listening on 127\\.0\\.0\\.1:([0-9]+)");
  std::smatch m;
  if (!std::regex_search(output, m, re)) return 0;
  return std::stoi(m[1]);
}

std::unique_ptr<S3rver> S3rver::start(const S3rverOptions& opts, std::string* error) {
  const std::string script = tools_path("node_modules/s3rver/bin/s3rver.js");
  if (!std::filesystem::exists(script)) {
    *error = "s3rver is not installed (" + script + " missing): run scripts/setup.sh";
    return nullptr;
  }
  if (!have_program("node")) {
    *error = "node is not on PATH: run scripts/setup.sh";
    return nullptr;
  }
  std::string data = opts.dir + "/s3rver-data";
  std::filesystem::create_directories(data);
  std::vector<std::string> argv = {"node",
                                   "--openssl-legacy-provider",
                                   script,
                                   "-d",
                                   data,
                                   "-a",
                                   "127.0.0.1",
                                   "-p",
                                   "0",
                                   "--silent",
                                   "--service-endpoint",
                                   opts.service_endpoint};
  for (const auto& b : opts.buckets) {
    argv.push_back("--configure-bucket");
    argv.push_back(b);
  }
  std::unique_ptr<S3rver> s(new S3rver());
  s->service_endpoint_ = opts.service_endpoint;
  s->proc_ = Process::spawn(argv, opts.dir);
  auto out = s->proc_.wait_for_output("listening on", std::chrono::seconds(20));
  if (!out) {
    *error = "s3rver did not start within 20 s; stdout: " + s->proc_.stdout_text() +
             " stderr: " + s->proc_.stderr_text();
    return nullptr;
  }
  s->port_ = parse_listening_port(*out);
  if (s->port_ == 0 || !wait_for_port(s->port_, std::chrono::seconds(5))) {
    *error = "s3rver printed no usable port: " + *out;
    return nullptr;
  }
  return s;
}

S3rver::~S3rver() {
  stop();
}

void S3rver::stop() {
  if (proc_.running()) {
    proc_.kill();
    proc_.wait(std::chrono::seconds(10));
  }
}

std::string S3rver::endpoint() const {
  return "http://127.0.0.1:" + std::to_string(port_);
}

std::string S3rver::vhost_endpoint() const {
  return "http://s3." + service_endpoint_ + ":" + std::to_string(port_);
}

std::string S3rver::logs() const {
  return proc_.stdout_text() + proc_.stderr_text();
}

std::vector<std::string> S3rver::aws_env() {
  return {"AWS_ACCESS_KEY_ID=S3RVER",
          "AWS_SECRET_ACCESS_KEY=S3RVER",
          "AWS_DEFAULT_REGION=us-east-1",
          "AWS_EC2_METADATA_DISABLED=true",
          "AWS_PAGER=",
          "AWS_CONFIG_FILE=/dev/null",
          "AWS_SHARED_CREDENTIALS_FILE=/dev/null"};
}

}  // namespace strata::test
