// Child processes for tests: real servers (s3rver, etcd, haproxy), CLI runs
// and crash victims. A Process is killed (SIGKILL) and reaped when destroyed,
// so no test leaves a server behind.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strata::test {

class Process {
 public:
  // Starts argv[0] (looked up in PATH) with stdout and stderr captured to
  // files in `log_dir` (or discarded if empty). env_add entries are
  // "NAME=value" added to the inherited environment.
  static Process spawn(const std::vector<std::string>& argv, const std::string& log_dir = "",
                       const std::vector<std::string>& env_add = {});

  Process() = default;
  Process(Process&& o) noexcept;
  Process& operator=(Process&& o) noexcept;
  ~Process();

  int pid() const { return pid_; }
  bool running();
  // Sends a signal (SIGKILL by default).
  void kill(int sig = 9);
  // SIGSTOP, then waits (5 s at most) until every thread of the process is
  // stopped: kill() returns before the kernel has stopped them all, and a
  // thread still running may yet answer a request sent "after" the freeze.
  void freeze();
  // Waits for exit; returns the exit status (128+signal if killed), or
  // nullopt on timeout.
  std::optional<int> wait(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // Waits until the captured stdout contains `needle`; returns the stdout so
  // far, or nullopt on timeout or exit.
  std::optional<std::string> wait_for_output(const std::string& needle,
                                             std::chrono::milliseconds timeout);
  std::string stdout_text() const;
  std::string stderr_text() const;

 private:
  int pid_ = -1;
  std::optional<int> status_;
  std::string out_path_, err_path_;
};

// Runs a command to completion; returns {exit status, stdout+stderr}.
struct RunResult {
  int status;
  std::string output;
};
RunResult run(const std::vector<std::string>& argv, const std::vector<std::string>& env_add = {},
              std::chrono::milliseconds timeout = std::chrono::seconds(120));

// A TCP port on 127.0.0.1 that was free a moment ago.
int free_port();

// True if `program` is found in PATH.
bool have_program(const std::string& program);
// A process's resident memory in kB (VmRSS of /proc/PID/status); 0 when
// it cannot be read.
uint64_t rss_kb(int pid);
// Whether this build (the test and the programs it runs) uses
// AddressSanitizer, whose quarantine keeps freed memory resident: a bound
// on resident memory growth means little there. The sanitizer build does
// not instrument test cases (CMakeLists.txt), so GCC's own macro is not
// set in them; STRATA_SANITIZE is, in every target.
#if defined(__SANITIZE_ADDRESS__) || defined(STRATA_SANITIZE)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif

}  // namespace strata::test
