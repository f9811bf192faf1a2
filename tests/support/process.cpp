#include "support/process.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace strata::test {
namespace {

std::string slurp(const std::string& path) {
  if (path.empty()) return {};
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int decode_status(int st) {
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return -1;
}

}  // namespace

Process Process::spawn(const std::vector<std::string>& argv, const std::string& log_dir,
                       const std::vector<std::string>& env_add) {
  static int counter = 0;
  Process p;
  if (!log_dir.empty()) {
    std::string base =
        log_dir + "/proc-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    p.out_path_ = base + ".out";
    p.err_path_ = base + ".err";
  }
  std::vector<std::string> env_store;
  for (char** e = environ; *e; ++e) env_store.emplace_back(*e);
  for (const auto& e : env_add) env_store.push_back(e);
  std::vector<char*> envp, args;
  for (auto& e : env_store) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& a : argv_copy) args.push_back(a.data());
  args.push_back(nullptr);

  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    // Child: own process group so a kill reaches what it starts.
    ::setpgid(0, 0);
    int devnull = ::open("/dev/null", O_RDWR);
    ::dup2(devnull, 0);
    int out = p.out_path_.empty() ? devnull
                                  : ::open(p.out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = p.err_path_.empty() ? devnull
                                  : ::open(p.err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(out, 1);
    ::dup2(err, 2);
    ::execvpe(args[0], args.data(), envp.data());
    std::fprintf(stderr, "exec %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  p.pid_ = pid;
  return p;
}

Process::Process(Process&& o) noexcept
    : pid_(o.pid_),
      status_(o.status_),
      out_path_(std::move(o.out_path_)),
      err_path_(std::move(o.err_path_)) {
  o.pid_ = -1;
}

Process& Process::operator=(Process&& o) noexcept {
  if (this != &o) {
    if (pid_ > 0 && !status_) {
      kill();
      wait();
    }
    pid_ = o.pid_;
    status_ = o.status_;
    out_path_ = std::move(o.out_path_);
    err_path_ = std::move(o.err_path_);
    o.pid_ = -1;
  }
  return *this;
}

Process::~Process() {
  if (pid_ > 0 && !status_) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    int st;
    ::waitpid(pid_, &st, 0);
  }
}

bool Process::running() {
  if (pid_ <= 0 || status_) return false;
  int st;
  pid_t r = ::waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    status_ = decode_status(st);
    return false;
  }
  return true;
}

void Process::kill(int sig) {
  if (pid_ > 0 && !status_) {
    ::kill(-pid_, sig);
    ::kill(pid_, sig);
  }
}

namespace {

// Whether every thread of `pid` is stopped (state T or t in /proc).
bool all_threads_stopped(int pid) {
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  std::error_code ec;
  bool any = false;
  for (const auto& t : std::filesystem::directory_iterator(tasks, ec)) {
    std::ifstream in(t.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // "tid (comm) S ...": the state follows the last ')'.
    const auto close = stat.rfind(')');
    if (close == std::string::npos || close + 2 >= stat.size()) return false;
    if (stat[close + 2] != 'T' && stat[close + 2] != 't') return false;
    any = true;
  }
  return any && !ec;
}

}  // namespace

void Process::freeze() {
  kill(SIGSTOP);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (pid_ > 0 && !all_threads_stopped(pid_) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

std::optional<int> Process::wait(std::chrono::milliseconds timeout) {
  if (status_) return status_;
  if (pid_ <= 0) return std::nullopt;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int st;
    pid_t r = ::waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      status_ = decode_status(st);
      return status_;
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::optional<std::string> Process::wait_for_output(const std::string& needle,
                                                    std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::string out = stdout_text();
    if (out.find(needle) != std::string::npos) return out;
    if (!running()) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return std::nullopt;
}

std::string Process::stdout_text() const {
  return slurp(out_path_);
}
std::string Process::stderr_text() const {
  return slurp(err_path_);
}

RunResult run(const std::vector<std::string>& argv, const std::vector<std::string>& env_add,
              std::chrono::milliseconds timeout) {
  char tmpl[] = "/tmp/strata-run-XXXXXX";
  if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
  std::string dir = tmpl;
  RunResult rr{-1, {}};
  {
    Process p = Process::spawn(argv, dir, env_add);
    auto st = p.wait(timeout);
    if (!st) {
      p.kill();
      p.wait();
      rr.status = -1;
    } else {
      rr.status = *st;
    }
    rr.output = p.stdout_text() + p.stderr_text();
  }
  std::string cmd = "rm -rf '" + dir + "'";
  if (std::system(cmd.c_str()) != 0) {
    // Leftover temp output is harmless; nothing to do.
  }
  return rr;
}

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    throw std::runtime_error("bind for free port failed");
  }
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

uint64_t rss_kb(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6));
  }
  return 0;
}

bool have_program(const std::string& program) {
  std::string cmd = "command -v '" + program + "' >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

}  // namespace strata::test
