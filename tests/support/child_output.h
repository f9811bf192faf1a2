// For the child processes of kill -9 tests: their log of operations and
// acknowledgements goes to stdout one whole line per write(2), so a kill
// can cut at most the last line short, and the parent can tell a cut line
// (no newline) from a complete one.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace strata::test {

// Writes `line` and a newline to stdout with one write(2) (more only if the
// pipe takes it in parts); exits with status 3 if stdout is gone.
inline void emit_line(const std::string& line) {
  std::string l = line + "\n";
  size_t off = 0;
  while (off < l.size()) {
    ssize_t n = ::write(1, l.data() + off, l.size() - off);
    if (n <= 0) std::_Exit(3);
    off += size_t(n);
  }
}

}  // namespace strata::test
