// What the demo (cmd_demo.cpp) and `strata produce --generate` share: the
// self-describing records they write, and progress reporting on stderr.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.h"

namespace strata::cli {

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

// The record the demo's producer `producer` writes as its `seq`-th record:
// self-describing, so a reader can verify every byte without knowing the
// offset it landed at.
std::string demo_record(int producer, uint64_t seq, uint64_t size);
// Checks a record read back; on success sets producer and seq.
bool check_demo_record(std::string_view r, uint64_t size, int* producer, uint64_t* seq);

}  // namespace strata::cli
