// `strata demo` runs a list of phases over one stream: the local log's
// phases (write, read+verify, disk) first, then any phase another module
// registers (the remote tier adds upload / remote read phases this way,
// without touching cmd_log.cpp). Each phase reports one text line and a JSON
// object (under "phases" in --json output).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.h"
#include "log/registry.h"
#include "log/stream_log.h"

namespace strata::cli {

struct DemoContext {
  std::string data_dir;
  std::string stream;
  // Workload.
  uint64_t records = 0;
  uint64_t record_size = 0;
  uint64_t batch = 0;
  int producers = 0;
  log::FsyncPolicy fsync = log::FsyncPolicy::always;
  // The open registry and stream, shared by all phases.
  std::unique_ptr<log::StreamRegistry> registry;
  std::shared_ptr<log::StreamLog> log;
  // Progress on stderr ("<phase>: <what>"); a no-op with --json.
  std::function<void(const std::string&)> progress;
};

struct DemoPhaseResult {
  std::string line;     // one human-readable line
  nlohmann::json json;  // the same facts, machine-readable
};

struct DemoPhase {
  std::string name;
  std::function<Result<DemoPhaseResult>(DemoContext&)> run;
};

// Progress for long operations, on stderr only (never mixed into --json
// stdout): on a terminal one line rewritten in place at most every 100 ms;
// otherwise a full line at most every 2 s. Silent when disabled.
class Progress {
 public:
  explicit Progress(bool enabled);
  ~Progress() { done(); }
  void update(const std::string& msg);
  // Ends the in-place line (if any).
  void done();

 private:
  bool enabled_;
  bool tty_;
  bool dirty_ = false;
  int64_t last_ns_ = 0;
};

// Phases registered by other modules; they run after the log's own phases,
// in registration order.
std::vector<DemoPhase>& extra_demo_phases();

struct DemoPhaseRegistrar {
  explicit DemoPhaseRegistrar(DemoPhase p) { extra_demo_phases().push_back(std::move(p)); }
};

// The record the demo's producer `producer` writes as its `seq`-th record:
// self-describing, so a reader can verify every byte without knowing the
// offset it landed at.
std::string demo_record(int producer, uint64_t seq, uint64_t size);
// Checks a record read back; on success sets producer and seq.
bool check_demo_record(std::string_view r, uint64_t size, int* producer, uint64_t* seq);

}  // namespace strata::cli
